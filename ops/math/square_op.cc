// square: Out = X * X, elementwise.
#include "ops/math/unary.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SquareKernel(KernelContext& ctx) {
  UnaryForward(ctx, [](auto x) { return x * x; });
}

// X@GRAD = 2 X Out@GRAD.
void SquareGradKernel(KernelContext& ctx) {
  UnaryBackward(ctx, "X", [](auto x, auto dout) { return 2 * x * dout; });
}

}  // namespace

RILL_REGISTER_OP(square, OpSchema("square")
                             .Doc("Out = X * X, elementwise.")
                             .Input("X", "input tensor")
                             .Output("Out", "result, same shape and type as X")
                             .InferShape(SameShapeAs("X", "Out"))
                             .CpuKernel(SquareKernel)
                             .DefaultGrad());

RILL_REGISTER_OP(square_grad,
                 OpSchema("square_grad")
                     .Doc("X@GRAD = 2 X Out@GRAD.")
                     .Input("X", "the forward X")
                     .Input("Out", "the forward Out (unused)", kOptional)
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .InferShape(SameShapeAs("X", "X@GRAD"))
                     .CpuKernel(SquareGradKernel));

}  // namespace rill
