// Agreement cases of the pool2d CUDA kernels (ops/nn/pool_cuda.cu): pool2d
// and pool2d_grad, max and avg (exclusive and not), windows apart, touching
// and overlapping, paddings, unequal ksize/strides/paddings per axis, global
// pooling (ksize and paddings then ignored), a single window that leaves part
// of the plane uncovered, float32 and float64, Out@GRAD absent, and sizes
// that make the grid-stride loops go round.
//
// Max pooling's gradient goes to the first largest element of each window
// (scan order): X is rounded to multiples of 0.5 so that windows hold ties
// (-0.0 among them), and the gradient cases also put NaNs in X, some as the
// first element of a window (it then wins) and some later (never winning).
// Only the gradient cases get NaNs: their outputs stay finite, where pool2d's
// would be NaN and not comparable.
//
// All exact (atol 0, rtol 0): the max is a comparison, the average's sum is
// taken in the CPU's order and divided once, and each element of X@GRAD
// gathers what the windows send it in the CPU's window order, from 0.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using Attrs = std::vector<std::pair<std::string, proto::Attr>>;
using testing::RandomTensor;

struct PoolSpec {
  Shape x;  // [N, C, H, W]
  std::string type;
  std::vector<int64_t> ksize;
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> paddings = {0, 0};
  bool global = false;
  bool exclusive = true;

  Attrs attrs() const {
    return {{"pooling_type", StringAttr("pooling_type", type)},
            {"ksize", IntsAttr("ksize", ksize)},
            {"strides", IntsAttr("strides", strides)},
            {"paddings", IntsAttr("paddings", paddings)},
            {"global_pooling", BoolAttr("global_pooling", global)},
            {"exclusive", BoolAttr("exclusive", exclusive)}};
  }
  Shape out() const {
    if (global) return {x[0], x[1], 1, 1};
    return {x[0], x[1], (x[2] + 2 * paddings[0] - ksize[0]) / strides[0] + 1,
            (x[3] + 2 * paddings[1] - ksize[1]) / strides[1] + 1};
  }
};

// Values in [-1, 1] rounded to multiples of 0.5: ties in most windows.
Tensor Quantized(const Shape& shape, uint64_t seed, DataType dtype) {
  Tensor t = RandomTensor(shape, seed, -1, 1, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    T* v = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = std::round(v[i] * T(2)) / T(2);
  });
  return t;
}

// Quantized, with NaNs at every plane's first element for every third plane
// (the first element of the windows at the top-left corner, and of a global
// window) and at every 7th element elsewhere.
Tensor WithNaNs(const Shape& shape, uint64_t seed, DataType dtype) {
  Tensor t = Quantized(shape, seed, dtype);
  const int64_t plane = shape[2] * shape[3];
  VisitFloatType(dtype, [&]<class T>() {
    T* v = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if ((i % plane == 0 && (i / plane) % 3 == 0) || i % 7 == 3) {
        v[i] = std::numeric_limits<T>::quiet_NaN();
      }
    }
  });
  return t;
}

void AddCases(std::vector<Case>& cases, const PoolSpec& spec, DataType dtype, uint64_t seed) {
  const bool max = spec.type == "max";
  const Tensor x = max ? Quantized(spec.x, seed, dtype) : RandomTensor(spec.x, seed, -1, 1, dtype);
  const Tensor dout = RandomTensor(spec.out(), seed + 1, -1, 1, dtype);
  cases.push_back({"pool2d", {{"X", x}}, {"Out"}, 0, 0, spec.attrs()});
  cases.push_back({"pool2d_grad", {{"X", x}, {"Out@GRAD", dout}}, {"X@GRAD"}, 0, 0, spec.attrs()});
  if (max) {
    const Tensor x_nan = WithNaNs(spec.x, seed + 2, dtype);
    cases.push_back(
        {"pool2d_grad", {{"X", x_nan}, {"Out@GRAD", dout}}, {"X@GRAD"}, 0, 0, spec.attrs()});
  }
}

}  // namespace

std::vector<Case> PoolCases() {
  constexpr DataType kF32 = DataType::kFloat32;
  constexpr DataType kF64 = DataType::kFloat64;
  std::vector<PoolSpec> specs;
  for (const char* type : {"max", "avg"}) {
    // 2x2, stride 2: windows apart.
    specs.push_back({{2, 3, 8, 8}, type, {2, 2}, {2, 2}});
    // 3x3, stride 2, padding 1: overlapping windows over the padding.
    specs.push_back({{2, 3, 9, 10}, type, {3, 3}, {2, 2}, {1, 1}});
    // 3x3, stride 1, padding only along H: every element in up to 9 windows.
    specs.push_back({{2, 2, 7, 6}, type, {3, 3}, {1, 1}, {1, 0}});
    // Unequal per axis: ksize [2, 3], strides [1, 2], paddings [1, 1]; the
    // last column's windows stop short of the input's edge.
    specs.push_back({{3, 2, 6, 9}, type, {2, 3}, {1, 2}, {1, 1}});
    // Global pooling: ksize and paddings ignored.
    specs.push_back({{4, 5, 7, 6}, type, {2, 2}, {1, 1}, {1, 1}, true});
    // Global over planes larger than a block (1023 elements, 256 threads).
    specs.push_back({{2, 3, 33, 31}, type, {1, 1}, {1, 1}, {0, 0}, true});
    // One window per plane that leaves rows and columns uncovered (stride 3).
    specs.push_back({{2, 2, 5, 5}, type, {3, 3}, {3, 3}});
    // Windows apart with gaps between them and padding, unequal per axis:
    // max pooling's gradient one thread per window.
    specs.push_back({{2, 3, 11, 10}, type, {2, 3}, {3, 3}, {1, 1}});
    // One window per plane, in the padding's corner (clipped to [0, 2)).
    specs.push_back({{2, 2, 3, 3}, type, {3, 3}, {4, 4}, {1, 1}});
  }
  std::vector<Case> cases;
  uint64_t seed = 4000;
  for (const PoolSpec& spec : specs) {
    for (DataType dtype : {kF32, kF64}) {
      AddCases(cases, spec, dtype, seed);
      if (spec.type == "avg") {  // the same windows with padding counted in
        PoolSpec inclusive = spec;
        inclusive.exclusive = false;
        AddCases(cases, inclusive, dtype, seed + 5);
      }
      seed += 10;
    }
  }
  // No Out@GRAD: zeros.
  cases.push_back({"pool2d_grad",
                   {{"X", Quantized({2, 3, 9, 10}, 4900, kF32)}},
                   {"X@GRAD"},
                   0,
                   0,
                   specs[1].attrs()});
  // 2M elements: more than the grid's 4096 blocks of 256 threads cover.
  AddCases(cases, {{8, 64, 64, 64}, "max", {3, 3}, {2, 2}, {1, 1}}, kF32, 4910);
  AddCases(cases, {{8, 64, 64, 64}, "avg", {3, 3}, {1, 1}, {1, 1}}, kF32, 4920);
  return cases;
}

}  // namespace rill
