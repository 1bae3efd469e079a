// gaussian_random: Out = values drawn from a normal distribution N(mean, std^2).
#include <limits>

#include "ops/tensor/random_fill.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void GaussianRandomShape(ShapeContext& ctx) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) ctx.Check(d >= 0, "shape ", ShapeToString(shape), " has a negative dim");
  const float stddev = ctx.Attr<float>("std");
  ctx.Check(stddev >= 0, "std must be >= 0, is ", stddev);
  ctx.SetOutput("Out", shape, ParseDataType(ctx.Attr<std::string>("dtype")));
}

void GaussianRandomKernel(KernelContext& ctx) { FillGaussianRandom(ctx, ctx.Output("Out")); }

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
