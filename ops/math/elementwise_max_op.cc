// elementwise_max: Out = max(X, Y), Y broadcast against X (see elementwise.h).
// Where X == Y the gradient goes to Y, as in Fluid.
#include "ops/math/elementwise.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void MaxKernel(KernelContext& ctx) {
  ElementwiseForward(ctx, [](auto x, auto y) { return x > y ? x : y; });
}

// dX = dOut where X > Y, dY = sum of dOut where X <= Y.
void MaxGradKernel(KernelContext& ctx) {
  ElementwiseBackward(
      ctx, [](auto x, auto y, auto dout) { return x > y ? dout : decltype(dout)(0); },
      [](auto x, auto y, auto dout) { return x > y ? decltype(dout)(0) : dout; });
}

}  // namespace

RILL_REGISTER_OP(elementwise_max,
                 ElementwiseSchema("elementwise_max", "Out = max(X, Y)", MaxKernel));
RILL_REGISTER_OP(elementwise_max_grad,
                 ElementwiseGradSchema("elementwise_max", "Out = max(X, Y)", MaxGradKernel));

}  // namespace rill
