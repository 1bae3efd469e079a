// elementwise_mul: Out = X * Y, Y broadcast against X (see elementwise.h).
#include "ops/math/elementwise.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void MulKernel(KernelContext& ctx) {
  ElementwiseForward(ctx, [](auto x, auto y) { return x * y; });
}

// dX = dOut * Y, dY = sum of dOut * X over the broadcast dims.
void MulGradKernel(KernelContext& ctx) {
  ElementwiseBackward(
      ctx, [](auto, auto y, auto dout) { return dout * y; },
      [](auto x, auto, auto dout) { return dout * x; });
}

}  // namespace

RILL_REGISTER_OP(elementwise_mul, ElementwiseSchema("elementwise_mul", "Out = X * Y", MulKernel));
RILL_REGISTER_OP(elementwise_mul_grad,
                 ElementwiseGradSchema("elementwise_mul", "Out = X * Y", MulGradKernel));

}  // namespace rill
