#include "ops/tensor/random_fill.h"

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace rill {
namespace {

// One draw per element, its top 53 bits scaled to [0, 1), then to [lo, hi),
// kept below hi after rounding to T.
template <class T>
void DrawUniform(std::mt19937_64& rng, double lo, double hi, T* o, int64_t n) {
  const T top = static_cast<T>(hi);
  const T below_top = std::nextafter(top, static_cast<T>(lo));
  for (int64_t i = 0; i < n; ++i) {
    // The top 53 bits of a draw, scaled to [0, 1).
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    T v = static_cast<T>(lo + (hi - lo) * u);
    // Rounding to T may land on max itself; keep the interval half-open.
    if (v >= top && lo < hi) v = below_top;
    o[i] = v;
  }
}

// Box-Muller: two draws (u1 in (0, 1], u2 in [0, 1)) give two independent
// standard normals; the second of the pair is dropped at an odd end.
template <class T>
void DrawGaussian(std::mt19937_64& rng, double mean, double stddev, T* o, int64_t n) {
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;  // (0, 1]: log is finite
    const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    o[i] = static_cast<T>(mean + stddev * r * std::cos(angle));
    if (i + 1 < n) o[i + 1] = static_cast<T>(mean + stddev * r * std::sin(angle));
  }
}

}  // namespace

void FillUniformRandom(KernelContext& ctx, Tensor* out) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  const double lo = ctx.Attr<float>("min");
  const double hi = ctx.Attr<float>("max");
  RILL_CHECK(lo <= hi, kInvalidArgument, "min (", lo, ") must not exceed max (", hi, ")");
  VisitFloatType(dtype, [&]<class T>() {
    T* o = out->Allocate<T>(shape);
    DrawUniform(ctx.rng(), lo, hi, o, out->numel());
  });
}

void FillGaussianRandom(KernelContext& ctx, Tensor* out) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  const double mean = ctx.Attr<float>("mean");
  const double stddev = ctx.Attr<float>("std");
  RILL_CHECK(stddev >= 0, kInvalidArgument, "std must be >= 0, is ", stddev);
  VisitFloatType(dtype, [&]<class T>() {
    T* o = out->Allocate<T>(shape);
    DrawGaussian(ctx.rng(), mean, stddev, o, out->numel());
  });
}

}  // namespace rill
