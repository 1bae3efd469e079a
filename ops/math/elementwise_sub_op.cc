// elementwise_sub: Out = X - Y, Y broadcast against X (see elementwise.h).
#include "ops/math/elementwise.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SubKernel(KernelContext& ctx) {
  ElementwiseForward(ctx, [](auto x, auto y) { return x - y; });
}

// dX = dOut, dY = -sum of dOut over the broadcast dims.
void SubGradKernel(KernelContext& ctx) {
  ElementwiseBackward(
      ctx, [](auto, auto, auto dout) { return dout; }, [](auto, auto, auto dout) { return -dout; });
}

}  // namespace

RILL_REGISTER_OP(elementwise_sub, ElementwiseSchema("elementwise_sub", "Out = X - Y", SubKernel));
RILL_REGISTER_OP(elementwise_sub_grad,
                 ElementwiseGradSchema("elementwise_sub", "Out = X - Y", SubGradKernel));

}  // namespace rill
