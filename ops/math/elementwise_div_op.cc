// elementwise_div: Out = X / Y, Y broadcast against X (see elementwise.h).
// Division by zero follows IEEE 754 (inf or NaN), as in every framework.
#include "ops/math/elementwise.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void DivKernel(KernelContext& ctx) {
  ElementwiseForward(ctx, [](auto x, auto y) { return x / y; });
}

// dX = dOut / Y, dY = -sum of dOut * X / Y^2 over the broadcast dims
// (from X rather than Out, so the gradient does not depend on Out).
void DivGradKernel(KernelContext& ctx) {
  ElementwiseBackward(
      ctx, [](auto, auto y, auto dout) { return dout / y; },
      [](auto x, auto y, auto dout) { return -dout * x / (y * y); });
}

}  // namespace

RILL_REGISTER_OP(elementwise_div, ElementwiseSchema("elementwise_div", "Out = X / Y", DivKernel));
RILL_REGISTER_OP(elementwise_div_grad,
                 ElementwiseGradSchema("elementwise_div", "Out = X / Y", DivGradKernel));

}  // namespace rill
