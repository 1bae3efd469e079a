// Agreement cases of the binary elementwise ops' CUDA kernels
// (ops/math/binary_cuda.cu): elementwise_add, _sub, _mul, _div, _max and their
// gradients, over every broadcast the CPU allows (same shapes, Y aligned with
// X's trailing dims, Y placed by an explicit axis, Y with trailing 1s, a
// one-element Y), float32 and float64, with and without Out@GRAD and with
// each gradient output alone.
//
// All exact (atol 0, rtol 0): each element of Out and X@GRAD is one or two
// correctly rounded operations on both sides, and the CUDA kernel sums each
// element of Y@GRAD in the CPU's order (ops/math/broadcast_sum.h), with the
// _rn intrinsics so that nvcc fuses nothing into an FMA (the x86-64 CPU
// build has no FMA).
#include <string>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using Attrs = std::vector<std::pair<std::string, proto::Attr>>;

Attrs Axis(int64_t axis) { return {{"axis", IntAttr("axis", axis)}}; }

}  // namespace

std::vector<Case> BinaryCases() {
  using testing::RandomTensor;
  constexpr auto kF32 = DataType::kFloat32;
  // Same shapes.
  const Tensor x = RandomTensor({37, 129}, 101, -1, 1, kF32);
  const Tensor y = RandomTensor({37, 129}, 102, -1, 1, kF32);
  const Tensor dout = RandomTensor({37, 129}, 103, -1, 1, kF32);
  // Divisors kept away from 0 (both signs): a division by a tiny Y gives
  // huge values that the |cpu - cuda| <= tol comparison handles badly if
  // they overflow to inf on both sides.
  const Tensor ydiv = RandomTensor({37, 129}, 104, 0.5, 2, kF32);
  const Tensor x64 = RandomTensor({1000}, 105, -1, 1);
  const Tensor y64 = RandomTensor({1000}, 106, -1, 1);
  const Tensor ydiv64 = RandomTensor({1000}, 107, -2, -0.5);
  const Tensor dout64 = RandomTensor({1000}, 108, -1, 1);
  // X [4, 5, 6] with Y over its trailing dims, at axis 1, at axis 0, with a
  // trailing 1, and of one element.
  const Tensor x3 = RandomTensor({4, 5, 6}, 109, -1, 1, kF32);
  const Tensor dout3 = RandomTensor({4, 5, 6}, 110, -1, 1, kF32);
  const Tensor y_last = RandomTensor({6}, 111, 0.5, 2, kF32);       // default axis, post 1
  const Tensor y_tail = RandomTensor({5, 6}, 112, 0.5, 2, kF32);    // default axis (1)
  const Tensor y_mid = RandomTensor({5}, 113, 0.5, 2, kF32);        // axis 1: pre 4, post 6
  const Tensor y_head = RandomTensor({4, 5}, 114, 0.5, 2, kF32);    // axis 0: post 6
  const Tensor y_ones = RandomTensor({5, 1}, 115, 0.5, 2, kF32);    // axis 1, trailing 1
  const Tensor y_one = RandomTensor({1}, 116, 0.5, 2, kF32);        // one element
  const Tensor y_one2 = RandomTensor({1, 1}, 117, -2, -0.5, kF32);  // one element, rank 2
  const Tensor x3_64 = RandomTensor({4, 5, 6}, 118, -1, 1);
  const Tensor dout3_64 = RandomTensor({4, 5, 6}, 119, -1, 1);
  const Tensor y_mid64 = RandomTensor({5}, 120, 0.5, 2);
  const Tensor y_one64 = RandomTensor({1}, 121, 0.5, 2);
  // More than the launch's 4096 blocks of 256 threads cover in one pass: the
  // grid-stride loops go round; Y@GRAD sums 1100 terms per element, or all
  // 1.1M for the one-element Y.
  const Tensor big = RandomTensor({1100, 1000}, 122, -1, 1, kF32);
  const Tensor dbig = RandomTensor({1100, 1000}, 123, -1, 1, kF32);
  const Tensor y_big = RandomTensor({1000}, 124, 0.5, 2, kF32);
  const Tensor y_big_one = RandomTensor({1}, 125, 0.5, 2, kF32);
  // A convolution bias's shape ([batch, channels, pixels], axis 1) with rows
  // longer than broadcast_sum.h's chunk (1030 > 1024) and more pieces than a
  // block's threads (300 * 2); and a post-1 Y of 3000 elements (one thread each).
  const Tensor conv = RandomTensor({300, 3, 1030}, 126, -1, 1, kF32);
  const Tensor dconv = RandomTensor({300, 3, 1030}, 127, -1, 1, kF32);
  const Tensor y_conv = RandomTensor({3}, 128, 0.5, 2, kF32);
  const Tensor wide = RandomTensor({40, 3000}, 129, -1, 1, kF32);
  const Tensor dwide = RandomTensor({40, 3000}, 130, -1, 1, kF32);
  const Tensor y_wide = RandomTensor({3000}, 131, 0.5, 2, kF32);

  std::vector<Case> cases;
  const std::vector<std::string> kOps = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                         "elementwise_div", "elementwise_max"};
  for (const std::string& op : kOps) {
    const bool div = op == "elementwise_div";
    const Tensor& ys = div ? ydiv : y;
    const Tensor& ys64 = div ? ydiv64 : y64;
    const std::string grad = op + "_grad";
    // Forward.
    cases.push_back({op, {{"X", x}, {"Y", ys}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", x64}, {"Y", ys64}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", x3}, {"Y", y_last}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", x3}, {"Y", y_tail}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", x3}, {"Y", y_tail}}, {"Out"}, 0, 0, Axis(1)});
    cases.push_back({op, {{"X", x3}, {"Y", y_mid}}, {"Out"}, 0, 0, Axis(1)});
    cases.push_back({op, {{"X", x3}, {"Y", y_head}}, {"Out"}, 0, 0, Axis(0)});
    cases.push_back({op, {{"X", x3}, {"Y", y_ones}}, {"Out"}, 0, 0, Axis(1)});
    cases.push_back({op, {{"X", x3}, {"Y", y_one}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", x3}, {"Y", y_one2}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", x3_64}, {"Y", y_mid64}}, {"Out"}, 0, 0, Axis(1)});
    cases.push_back({op, {{"X", x3_64}, {"Y", y_one64}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", big}, {"Y", y_big}}, {"Out"}, 0, 0});
    cases.push_back({op, {{"X", big}, {"Y", y_big_one}}, {"Out"}, 0, 0});
    // Gradients, both outputs.
    const std::vector<std::string> both = {"X@GRAD", "Y@GRAD"};
    cases.push_back({grad, {{"X", x}, {"Y", ys}, {"Out@GRAD", dout}}, both, 0, 0});
    cases.push_back({grad, {{"X", x64}, {"Y", ys64}, {"Out@GRAD", dout64}}, both, 0, 0});
    cases.push_back({grad, {{"X", x3}, {"Y", y_last}, {"Out@GRAD", dout3}}, both, 0, 0});
    cases.push_back({grad, {{"X", x3}, {"Y", y_tail}, {"Out@GRAD", dout3}}, both, 0, 0});
    cases.push_back({grad, {{"X", x3}, {"Y", y_mid}, {"Out@GRAD", dout3}}, both, 0, 0, Axis(1)});
    cases.push_back({grad, {{"X", x3}, {"Y", y_head}, {"Out@GRAD", dout3}}, both, 0, 0, Axis(0)});
    cases.push_back({grad, {{"X", x3}, {"Y", y_ones}, {"Out@GRAD", dout3}}, both, 0, 0, Axis(1)});
    cases.push_back({grad, {{"X", x3}, {"Y", y_one}, {"Out@GRAD", dout3}}, both, 0, 0});
    cases.push_back({grad, {{"X", x3}, {"Y", y_one2}, {"Out@GRAD", dout3}}, both, 0, 0});
    cases.push_back(
        {grad, {{"X", x3_64}, {"Y", y_mid64}, {"Out@GRAD", dout3_64}}, both, 0, 0, Axis(1)});
    cases.push_back({grad, {{"X", x3_64}, {"Y", y_one64}, {"Out@GRAD", dout3_64}}, both, 0, 0});
    cases.push_back({grad, {{"X", big}, {"Y", y_big}, {"Out@GRAD", dbig}}, both, 0, 0});
    cases.push_back({grad, {{"X", big}, {"Y", y_big_one}, {"Out@GRAD", dbig}}, both, 0, 0});
    cases.push_back(
        {grad, {{"X", conv}, {"Y", y_conv}, {"Out@GRAD", dconv}}, {"Y@GRAD"}, 0, 0, Axis(1)});
    cases.push_back({grad, {{"X", wide}, {"Y", y_wide}, {"Out@GRAD", dwide}}, {"Y@GRAD"}, 0, 0});
    // Each gradient output alone.
    cases.push_back(
        {grad, {{"X", x3}, {"Y", y_mid}, {"Out@GRAD", dout3}}, {"X@GRAD"}, 0, 0, Axis(1)});
    cases.push_back(
        {grad, {{"X", x3}, {"Y", y_mid}, {"Out@GRAD", dout3}}, {"Y@GRAD"}, 0, 0, Axis(1)});
    // No Out@GRAD: zeros.
    cases.push_back({grad, {{"X", x3}, {"Y", y_mid}}, both, 0, 0, Axis(1)});
    cases.push_back({grad, {{"X", x3_64}, {"Y", y_one64}}, both, 0, 0});
    cases.push_back({grad, {{"X", x}, {"Y", ys}}, {"Y@GRAD"}, 0, 0});
  }
  // max where X == Y everywhere: Out is X, and the gradient goes to Y only.
  cases.push_back({"elementwise_max", {{"X", x}, {"Y", x}}, {"Out"}, 0, 0});
  cases.push_back({"elementwise_max_grad",
                   {{"X", x}, {"Y", x}, {"Out@GRAD", dout}},
                   {"X@GRAD", "Y@GRAD"},
                   0,
                   0});
  return cases;
}

}  // namespace rill
