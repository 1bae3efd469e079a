// Agreement cases of squared_l2_norm, squared_l2_norm_grad and less_than's
// CUDA kernels (ops/math/norm_compare_cuda.cu).
//
// All exact (atol 0, rtol 0). squared_l2_norm: the CUDA kernel squares in
// parallel but one thread adds the squares in the CPU loop's order, in the
// tensor's own type (float32 sums in float32, as on the CPU), with the _rn
// intrinsics so that nvcc fuses nothing into an FMA (the x86-64 CPU build
// has no FMA); the 1.1M-element sums would show any other order in their
// last bits, and they span many of the kernel's tiles of 2048. The gradient
// is (2 * dO) * x on both sides. less_than converts both sides to double
// before comparing, as the CPU does: ties, signed zeros, infinities and NaN
// give the same 0/1, and int64 values past 2^53 round alike (one case
// differs from an integer comparison because of it).
#include <cmath>
#include <cstdint>
#include <limits>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {

std::vector<Case> NormCompareCases() {
  using testing::MakeTensor;
  using testing::RandomTensor;
  constexpr auto kF32 = DataType::kFloat32;
  const Tensor x = RandomTensor({37, 129}, 601, -1, 1, kF32);  // 4773: not a whole tile
  const Tensor x64 = RandomTensor({1000}, 602, -1, 1);
  const Tensor big = RandomTensor({1100, 1000}, 603, -3, 3, kF32);
  const Tensor big64 = RandomTensor({1100, 1000}, 604, -1, 1);
  const Tensor tile = RandomTensor({2048}, 605, -1, 1, kF32);  // exactly one tile
  const Tensor one = RandomTensor({1}, 606, -1, 1, kF32);
  const Tensor empty(kF32, {0, 5});
  const Tensor d = RandomTensor({1}, 607, -2, 2, kF32);
  const Tensor d64 = RandomTensor({1}, 608, -2, 2);
  const Tensor out = RandomTensor({1}, 609, 0, 2, kF32);

  // less_than operands.
  const Tensor y = RandomTensor({37, 129}, 610, -1, 1, kF32);
  const Tensor y_one = RandomTensor({1}, 611, -0.5, 0.5, kF32);
  const Tensor y64 = RandomTensor({1000}, 612, -1, 1);
  const Tensor y_one64 = RandomTensor({1, 1}, 613, -0.5, 0.5);
  const Tensor big_y = RandomTensor({1}, 614, -1, 1, kF32);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  constexpr float kTiny = std::numeric_limits<float>::denorm_min();
  // Element by element: ties, signed zeros, infinities, NaN on either side,
  // neighbours one ulp apart, a denormal.
  const Tensor special_x = MakeTensor<float>(
      {12}, {1.5f, -2.0f, 0.0f, -0.0f, kInf, -kInf, kInf, kNan, 1.0f, kNan, 3.0f, -kTiny});
  const Tensor special_y = MakeTensor<float>(
      {12}, {1.5f, -2.0f, -0.0f, 0.0f, kInf, kInf, -kInf, 1.0f, kNan, kNan, 3.0000002f, 0.0f});
  constexpr double kInf64 = std::numeric_limits<double>::infinity();
  const Tensor special_x64 =
      MakeTensor<double>({6}, {0.1, -0.0, -kInf64, 1e308, 5e-324, std::nan("")});
  const Tensor special_y64 = MakeTensor<double>({6}, {0.1, 0.0, -1e308, kInf64, 0.0, 0.0});
  const Tensor i32_x = MakeTensor<int32_t>({2, 4}, {1, -2, 3, std::numeric_limits<int32_t>::min(),
                                                    7, 0, -5, std::numeric_limits<int32_t>::max()});
  const Tensor i32_y = MakeTensor<int32_t>({2, 4}, {1, -1, 2, std::numeric_limits<int32_t>::max(),
                                                    8, 0, -6, std::numeric_limits<int32_t>::min()});
  const Tensor i32_one = MakeTensor<int32_t>({1}, {3});
  // 2^53 < 2^53 + 1 as integers, but 2^53 + 1 rounds to 2^53 as a double:
  // the CPU (and so the CUDA kernel) says 0 for that pair.
  constexpr int64_t k53 = int64_t{1} << 53;
  const Tensor i64_x = MakeTensor<int64_t>({5}, {k53, -7, int64_t{1} << 62, 0, -k53 - 1});
  const Tensor i64_y = MakeTensor<int64_t>({5}, {k53 + 1, 9, (int64_t{1} << 62) + 1, 0, -k53});
  const Tensor i64_one = MakeTensor<int64_t>({1}, {-7});

  return {
      {"squared_l2_norm", {{"X", x}}, {"Out"}, 0, 0},
      {"squared_l2_norm", {{"X", x64}}, {"Out"}, 0, 0},
      {"squared_l2_norm", {{"X", big}}, {"Out"}, 0, 0},
      {"squared_l2_norm", {{"X", big64}}, {"Out"}, 0, 0},
      {"squared_l2_norm", {{"X", tile}}, {"Out"}, 0, 0},
      {"squared_l2_norm", {{"X", one}}, {"Out"}, 0, 0},
      {"squared_l2_norm", {{"X", empty}}, {"Out"}, 0, 0},  // 0
      {"squared_l2_norm_grad", {{"X", x}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"squared_l2_norm_grad", {{"X", x}, {"Out", out}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"squared_l2_norm_grad", {{"X", x64}, {"Out@GRAD", d64}}, {"X@GRAD"}, 0, 0},
      {"squared_l2_norm_grad", {{"X", big}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"squared_l2_norm_grad", {{"X", x}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
      {"squared_l2_norm_grad", {{"X", x64}}, {"X@GRAD"}, 0, 0},
      {"squared_l2_norm_grad", {{"X", empty}, {"Out@GRAD", d}}, {"X@GRAD"}, 0, 0},
      {"less_than", {{"X", x}, {"Y", y}}, {"Out"}, 0, 0},
      {"less_than", {{"X", x}, {"Y", y_one}}, {"Out"}, 0, 0},
      {"less_than", {{"X", x64}, {"Y", y64}}, {"Out"}, 0, 0},
      {"less_than", {{"X", x64}, {"Y", y_one64}}, {"Out"}, 0, 0},
      {"less_than", {{"X", big}, {"Y", big_y}}, {"Out"}, 0, 0},
      {"less_than", {{"X", special_x}, {"Y", special_y}}, {"Out"}, 0, 0},
      {"less_than", {{"X", special_x64}, {"Y", special_y64}}, {"Out"}, 0, 0},
      {"less_than", {{"X", i32_x}, {"Y", i32_y}}, {"Out"}, 0, 0},
      {"less_than", {{"X", i32_x}, {"Y", i32_one}}, {"Out"}, 0, 0},
      {"less_than", {{"X", i64_x}, {"Y", i64_y}}, {"Out"}, 0, 0},
      {"less_than", {{"X", i64_x}, {"Y", i64_one}}, {"Out"}, 0, 0},
      {"less_than", {{"X", empty}, {"Y", y_one}}, {"Out"}, 0, 0},
  };
}

}  // namespace rill
