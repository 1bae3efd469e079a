// adamw: Adam with decoupled weight decay, as PyTorch's torch.optim.AdamW:
//   Param = Param * (1 - lr * weight_decay), then adam's step:
//   m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g g,
//   Param = Param - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// That is Param -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * Param)
// with the decay taken from Param before the step, rounded as PyTorch rounds
// it. The decay does not go through the moments (unlike L2 regularisation in
// the gradient). Dense gradients only. The update is adam_update.cc's.
#include "ops/optimizer/adam_update.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void AdamWKernel(KernelContext& ctx) { RunAdamKernel(ctx, /*decoupled_decay=*/true); }

}  // namespace

RILL_REGISTER_OP(adamw,
                 WithAdamSlots(OpSchema("adamw").Doc(
                                   "Adam with decoupled weight decay (as torch.optim.AdamW), in "
                                   "place: Param *= 1 - lr * weight_decay, then Adam's step."))
                     .Attr("weight_decay", 0.01f,
                           "decoupled decay: Param is scaled by 1 - lr * weight_decay each step",
                           InRange(0, 1e30))
                     .CpuKernel(AdamWKernel));

}  // namespace rill
