// Agreement cases of mean, mean_grad and sum's CUDA kernels
// (ops/math/reduce_cuda.cu).
//
// All exact (atol 0, rtol 0): mean's CUDA kernel adds in the CPU loop's order
// (one thread, sequentially) and divides once, mean_grad is one division, sum
// adds its inputs per element in the CPU's order; every operation uses the
// _rn intrinsics, so nvcc fuses nothing into an FMA (the x86-64 CPU build has
// no FMA). The cases give sum one input only: a case binds one variable per
// slot. An empty X for mean is left out: 0 / 0 is NaN on both sides, which
// |cpu - cuda| <= tol cannot accept.
#include <cstdint>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {

std::vector<Case> ReduceCases() {
  using testing::MakeTensor;
  using testing::RandomTensor;
  const Tensor x = RandomTensor({37, 129}, 201, -1, 1, DataType::kFloat32);
  const Tensor x64 = RandomTensor({1000}, 202, -1, 1);
  // A sum of 1.1M floats: rounding errors pile up, so any other order of
  // additions would show in the last bits.
  const Tensor big = RandomTensor({1100, 1000}, 203, 0, 3, DataType::kFloat32);
  const Tensor big64 = RandomTensor({1100, 1000}, 204, -1, 1);
  const Tensor d = RandomTensor({1}, 205, -2, 2, DataType::kFloat32);
  const Tensor d64 = RandomTensor({1}, 206, -2, 2);
  const Tensor out = RandomTensor({1}, 207, -2, 2, DataType::kFloat32);
  const Tensor empty(DataType::kFloat32, {0, 5});
  const Tensor i32 = MakeTensor<int32_t>({2, 3}, {1, -2, 3, -4, 5, 2147483647});
  const Tensor i64 = MakeTensor<int64_t>({4}, {int64_t{1} << 40, -7, 0, 9});
  return {
      {"mean", {{"X", x}}, {"Out"}, 0, 0},
      {"mean", {{"X", x64}}, {"Out"}, 0, 0},
      {"mean", {{"X", big}}, {"Out"}, 0, 0},
      {"mean", {{"X", big64}}, {"Out"}, 0, 0},
      {"mean_grad", {{"X", x}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"mean_grad", {{"X", x}, {"Out", out}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"mean_grad", {{"X", x64}, {"Out@GRAD", d64}}, {"X@GRAD"}, 0, 0},
      {"mean_grad", {{"X", big}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"mean_grad", {{"X", x}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
      {"mean_grad", {{"X", x64}}, {"X@GRAD"}, 0, 0},
      {"mean_grad", {{"X", empty}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"sum", {{"X", x}}, {"Out"}, 0, 0},
      {"sum", {{"X", x64}}, {"Out"}, 0, 0},
      {"sum", {{"X", big}}, {"Out"}, 0, 0},
      {"sum", {{"X", i32}}, {"Out"}, 0, 0},
      {"sum", {{"X", i64}}, {"Out"}, 0, 0},
      {"sum", {{"X", empty}}, {"Out"}, 0, 0},
  };
}

}  // namespace rill
