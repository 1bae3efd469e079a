// sqrt: Out = sqrt(X), elementwise (NaN for negative X, as IEEE 754 says).
#include <cmath>

#include "ops/math/unary.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SqrtKernel(KernelContext& ctx) {
  UnaryForward(ctx, [](auto x) { return std::sqrt(x); });
}

// X@GRAD = Out@GRAD / (2 Out), read from Out so no second sqrt is needed.
void SqrtGradKernel(KernelContext& ctx) {
  UnaryBackward(ctx, "Out", [](auto out, auto dout) { return dout / (2 * out); });
}

}  // namespace

RILL_REGISTER_OP(sqrt, OpSchema("sqrt")
                           .Doc("Out = sqrt(X), elementwise.")
                           .Input("X", "input tensor")
                           .Output("Out", "result, same shape and type as X")
                           .InferShape(SameShapeAs("X", "Out"))
                           .CpuKernel(SqrtKernel)
                           .DefaultGrad());

RILL_REGISTER_OP(sqrt_grad, OpSchema("sqrt_grad")
                                .Doc("X@GRAD = Out@GRAD / (2 Out).")
                                .Input("X", "the forward X (unused)", kOptional)
                                .Input("Out", "the forward Out")
                                .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                                .Output("X@GRAD", "gradient of X", kOptional)
                                .InferShape(SameShapeAs("Out", "X@GRAD"))
                                .CpuKernel(SqrtGradKernel));

}  // namespace rill
