// mean: Out [1] = the mean of every element of X (NaN for an empty X, as in
// NumPy and PyTorch).
#include "ops/math/reduce_to_one.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void MeanKernel(KernelContext& ctx) {
  ReduceToOneForward(
      ctx, [](auto x) { return x; },
      [](auto sum, int64_t n) { return sum / static_cast<decltype(sum)>(n); });
}

// X@GRAD = Out@GRAD / numel(X) everywhere.
void MeanGradKernel(KernelContext& ctx) {
  ReduceToOneBackward(
      ctx, [](auto, auto dout, int64_t n) { return dout / static_cast<decltype(dout)>(n); });
}

}  // namespace

RILL_REGISTER_OP(mean, OpSchema("mean")
                           .Doc("Out [1] = mean of all elements of X.")
                           .Input("X", "input tensor")
                           .Output("Out", "[1], X's type")
                           .InferShape(ReduceToOneShape)
                           .CpuKernel(MeanKernel)
                           .DefaultGrad());

RILL_REGISTER_OP(mean_grad, OpSchema("mean_grad")
                                .Doc("X@GRAD = Out@GRAD / numel(X) everywhere.")
                                .Input("X", "the forward X (for its shape)")
                                .Input("Out", "the forward Out (unused)", kOptional)
                                .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                                .Output("X@GRAD", "gradient of X", kOptional)
                                .InferShape(ReduceToOneGradShape)
                                .CpuKernel(MeanGradKernel));

}  // namespace rill
