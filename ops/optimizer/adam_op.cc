// adam: Adam with bias correction, computed as PyTorch's torch.optim.Adam does.
// Beta1Pow/Beta2Pow hold beta^t for the current step t (beta itself at step 1)
// and are advanced by one step. Param and the moments are updated in place.
// The update itself is adam_update.cc's, shared with adamw.
#include "ops/optimizer/adam_update.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void AdamKernel(KernelContext& ctx) { RunAdamKernel(ctx, /*decoupled_decay=*/false); }

}  // namespace

RILL_REGISTER_OP(adam,
                 WithAdamSlots(OpSchema("adam").Doc(
                                   "Adam with bias correction (as torch.optim.Adam), in place."))
                     .CpuKernel(AdamKernel));

}  // namespace rill
