// warmup_cosine_decay: a step's learning rate under linear warm-up, then
// cosine decay (warmup_cosine.h). Appended before the updates by
// Optimizer::set_learning_rate_schedule(WarmupCosineDecay(...)).
#include "ops/optimizer/optimizer_util.h"
#include "ops/optimizer/warmup_cosine.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void WarmupCosineShape(ShapeContext& ctx) {
  CheckScalarSlot(ctx, "Step");
  CheckScalarSlot(ctx, "BaseRate");
  ctx.SetOutput("Out", {1}, ctx.InputType("BaseRate"));
}

void WarmupCosineKernel(KernelContext& ctx) {
  const WarmupCosineAttrs a = ReadWarmupCosineAttrs(ctx);
  const double step = ReadScalar(ctx.Input("Step"), "Step");
  const Tensor& base = ctx.Input("BaseRate");
  const double rate = WarmupCosineRate(ReadScalar(base, "BaseRate"), step, a.warmup_steps,
                                       a.decay_steps, a.min_ratio);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(base.dtype(), [&]<class T>() { out->Allocate<T>({1})[0] = static_cast<T>(rate); });
}

}  // namespace

RILL_REGISTER_OP(warmup_cosine_decay,
                 OpSchema("warmup_cosine_decay")
                     .Doc("Out = BaseRate * Step / warmup_steps while Step < warmup_steps, then "
                          "BaseRate * (min_ratio + (1 - min_ratio) * (1 + cos(pi * t)) / 2) with "
                          "t = min(1, (Step - warmup_steps) / decay_steps).")
                     .Input("Step",
                            "steps taken, this one included (1 at the first), one float element")
                     .Input("BaseRate", "the peak learning rate, one float element")
                     .Output("Out", "this step's learning rate, BaseRate's type")
                     .Attr("warmup_steps", 0, "steps of linear warm-up (0: none)", AtLeast(0))
                     .Attr("decay_steps", 1, "steps of the cosine after the warm-up", AtLeast(1))
                     .Attr("min_ratio", 0.0f, "the rate at the end, as a fraction of BaseRate",
                           InRange(0, 1))
                     .InferShape(WarmupCosineShape)
                     .CpuKernel(WarmupCosineKernel));

}  // namespace rill
