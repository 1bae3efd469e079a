// elementwise_add: Out = X + Y, Y broadcast against X (see elementwise.h).
#include "ops/math/elementwise.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void AddKernel(KernelContext& ctx) {
  ElementwiseForward(ctx, [](auto x, auto y) { return x + y; });
}

// dX = dOut, dY = sum of dOut over the broadcast dims.
void AddGradKernel(KernelContext& ctx) {
  ElementwiseBackward(
      ctx, [](auto, auto, auto dout) { return dout; }, [](auto, auto, auto dout) { return dout; });
}

}  // namespace

RILL_REGISTER_OP(elementwise_add, ElementwiseSchema("elementwise_add", "Out = X + Y", AddKernel));
RILL_REGISTER_OP(elementwise_add_grad,
                 ElementwiseGradSchema("elementwise_add", "Out = X + Y", AddGradKernel));

}  // namespace rill
