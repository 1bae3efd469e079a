// uniform_random: Out = values drawn uniformly from [min, max).
#include "ops/tensor/random_fill.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void UniformRandomShape(ShapeContext& ctx) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) ctx.Check(d >= 0, "shape ", ShapeToString(shape), " has a negative dim");
  const float min = ctx.Attr<float>("min");
  const float max = ctx.Attr<float>("max");
  ctx.Check(min <= max, "min (", min, ") must not exceed max (", max, ")");
  ctx.SetOutput("Out", shape, ParseDataType(ctx.Attr<std::string>("dtype")));
}

void UniformRandomKernel(KernelContext& ctx) { FillUniformRandom(ctx, ctx.Output("Out")); }

}  // namespace

RILL_REGISTER_OP(uniform_random,
                 OpSchema("uniform_random")
                     .Doc("Out = uniform random values in [min, max), from the op's generator.")
                     .Output("Out", "the random tensor")
                     .RequiredAttr("shape", AttrType::kInts, "dims of Out, each >= 0", AtLeast(0))
                     .Attr("dtype", "float32", "element type of Out", OneOf({"float32", "float64"}))
                     .Attr("min", -1.0f, "lower bound (inclusive)")
                     .Attr("max", 1.0f, "upper bound (exclusive)")
                     .Attr("seed", 0, "generator seed; 0 derives one from the program's seed")
                     .InferShape(UniformRandomShape)
                     .CpuKernel(UniformRandomKernel));

}  // namespace rill
