// gaussian_random: Out = values drawn from a normal distribution N(mean, std^2).
#include <cmath>
#include <limits>
#include <numbers>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void GaussianRandomShape(ShapeContext& ctx) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) ctx.Check(d >= 0, "shape ", ShapeToString(shape), " has a negative dim");
  const float stddev = ctx.Attr<float>("std");
  ctx.Check(stddev >= 0, "std must be >= 0, is ", stddev);
  ctx.SetOutput("Out", shape, ParseDataType(ctx.Attr<std::string>("dtype")));
}

void GaussianRandomKernel(KernelContext& ctx) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  const double mean = ctx.Attr<float>("mean");
  const double stddev = ctx.Attr<float>("std");
  RILL_CHECK(stddev >= 0, kInvalidArgument, "std must be >= 0, is ", stddev);
  Tensor* out = ctx.Output("Out");
  std::mt19937_64& rng = ctx.rng();
  VisitFloatType(dtype, [&]<class T>() {
    T* o = out->Allocate<T>(shape);
    const int64_t n = out->numel();
    // Box-Muller: two uniforms give two independent standard normals.
    for (int64_t i = 0; i < n; i += 2) {
      const double u1 =
          static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;  // (0, 1]: log is finite
      const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      const double r = std::sqrt(-2.0 * std::log(u1));
      const double angle = 2.0 * std::numbers::pi * u2;
      o[i] = static_cast<T>(mean + stddev * r * std::cos(angle));
      if (i + 1 < n) o[i + 1] = static_cast<T>(mean + stddev * r * std::sin(angle));
    }
  });
}

}  // namespace

RILL_REGISTER_OP(
    gaussian_random,
    OpSchema("gaussian_random")
        .Doc("Out = normal random values with the given mean and std, from the op's generator.")
        .Output("Out", "the random tensor")
        .RequiredAttr("shape", AttrType::kInts, "dims of Out, each >= 0", AtLeast(0))
        .Attr("dtype", "float32", "element type of Out", OneOf({"float32", "float64"}))
        .Attr("mean", 0.0f, "mean of the distribution")
        .Attr("std", 1.0f, "standard deviation, >= 0",
              InRange(0.0, std::numeric_limits<float>::max()))
        .Attr("seed", 0, "generator seed; 0 derives one from the program's seed")
        .InferShape(GaussianRandomShape)
        .CpuKernel(GaussianRandomKernel));

}  // namespace rill
