// Agreement cases of the unary math ops' CUDA kernels (ops/math/unary_cuda.cu):
// scale, sqrt, square and their gradients.
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {}  // namespace

std::vector<Case> UnaryCases() {
  using testing::RandomTensor;
  const Tensor x = RandomTensor({37, 129}, 11, -1, 1, DataType::kFloat32);
  const Tensor dy = RandomTensor({37, 129}, 12, -1, 1, DataType::kFloat32);
  const Tensor x64 = RandomTensor({1000}, 13, -1, 1);
  const Tensor dy64 = RandomTensor({1000}, 14, -1, 1);
  // More than the launch's 4096 blocks of 256 threads cover in one pass: the
  // grid-stride loop goes round.
  const Tensor big = RandomTensor({1100, 1000}, 15, -3, 3, DataType::kFloat32);
  // sqrt's inputs and outputs kept positive: negative X gives NaN on both
  // sides and a zero Out an infinite gradient, which the comparison
  // |cpu - cuda| <= tol cannot accept even where the two agree.
  const Tensor pos = RandomTensor({37, 129}, 16, 0.01, 4, DataType::kFloat32);
  const Tensor pos64 = RandomTensor({1000}, 17, 0.01, 4);
  // All exact (atol 0, rtol 0): multiplications, additions, a division and
  // sqrt, each correctly rounded on both sides in the CPU's order (the CUDA
  // kernels use the _rn intrinsics, so nvcc fuses nothing into an FMA, and
  // the x86-64 CPU build has no FMA).
  const std::vector<std::pair<std::string, proto::Attr>> after = {
      {"scale", FloatAttr("scale", 0.37f)},
      {"bias", FloatAttr("bias", -1.25f)},
      {"bias_after_scale", BoolAttr("bias_after_scale", true)}};
  const std::vector<std::pair<std::string, proto::Attr>> before = {
      {"scale", FloatAttr("scale", 0.37f)},
      {"bias", FloatAttr("bias", -1.25f)},
      {"bias_after_scale", BoolAttr("bias_after_scale", false)}};
  return {
      {"scale", {{"X", x}}, {"Out"}, 0, 0},  // defaults: scale 1, bias 0, after
      {"scale", {{"X", x}}, {"Out"}, 0, 0, after},
      {"scale", {{"X", x}}, {"Out"}, 0, 0, before},
      {"scale", {{"X", x64}}, {"Out"}, 0, 0, after},
      {"scale", {{"X", x64}}, {"Out"}, 0, 0, before},
      {"scale", {{"X", big}}, {"Out"}, 0, 0, after},
      // as ScaleGrad writes it: scale only
      {"scale", {{"X", dy}}, {"Out"}, 0, 0, {{"scale", FloatAttr("scale", -3.5f)}}},
      {"sqrt", {{"X", pos}}, {"Out"}, 0, 0},
      {"sqrt", {{"X", pos64}}, {"Out"}, 0, 0},
      {"sqrt_grad", {{"Out", pos}, {"Out@GRAD", dy}}, {"X@GRAD"}, 0, 0},
      {"sqrt_grad", {{"Out", pos64}, {"Out@GRAD", dy64}}, {"X@GRAD"}, 0, 0},
      {"sqrt_grad", {{"Out", pos}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
      {"sqrt_grad", {{"Out", pos64}}, {"X@GRAD"}, 0, 0},
      {"square", {{"X", x}}, {"Out"}, 0, 0},
      {"square", {{"X", x64}}, {"Out"}, 0, 0},
      {"square", {{"X", big}}, {"Out"}, 0, 0},
      {"square_grad", {{"X", x}, {"Out@GRAD", dy}}, {"X@GRAD"}, 0, 0},
      {"square_grad", {{"X", x64}, {"Out@GRAD", dy64}}, {"X@GRAD"}, 0, 0},
      {"square_grad", {{"X", x}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
      {"square_grad", {{"X", x64}}, {"X@GRAD"}, 0, 0},
  };
}

}  // namespace rill
