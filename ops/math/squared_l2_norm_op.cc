// squared_l2_norm: Out [1] = the sum of X's squared elements (gradient
// clipping by global norm sums these over every gradient).
#include "ops/math/reduce_to_one.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SquaredL2NormKernel(KernelContext& ctx) {
  ReduceToOneForward(
      ctx, [](auto x) { return x * x; }, [](auto sum, int64_t) { return sum; });
}

// X@GRAD = 2 X Out@GRAD.
void SquaredL2NormGradKernel(KernelContext& ctx) {
  ReduceToOneBackward(ctx, [](auto x, auto dout, int64_t) { return 2 * dout * x; });
}

}  // namespace

RILL_REGISTER_OP(squared_l2_norm, OpSchema("squared_l2_norm")
                                      .Doc("Out [1] = sum of X's elements squared.")
                                      .Input("X", "input tensor")
                                      .Output("Out", "[1], X's type")
                                      .InferShape(ReduceToOneShape)
                                      .CpuKernel(SquaredL2NormKernel)
                                      .DefaultGrad());

RILL_REGISTER_OP(squared_l2_norm_grad,
                 OpSchema("squared_l2_norm_grad")
                     .Doc("X@GRAD = 2 X Out@GRAD.")
                     .Input("X", "the forward X")
                     .Input("Out", "the forward Out (unused)", kOptional)
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .InferShape(ReduceToOneGradShape)
                     .CpuKernel(SquaredL2NormGradKernel));

}  // namespace rill
