// What the adam and adamw ops share (adam_op.cc, adamw_op.cc): their slots,
// attributes and shape inference, and the CPU kernel. adamw is adam with
// decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW: Param is
// first scaled by 1 - lr * weight_decay, then takes Adam's step; with
// weight_decay 0 it is adam bit for bit.
#pragma once

#include "rill/kernel_context.h"
#include "rill/op_schema.h"
#include "rill/shape_context.h"

namespace rill {

// Adds adam's inputs, outputs, attributes (beta1, beta2, epsilon) and shape
// inference to `schema`.
OpSchema WithAdamSlots(OpSchema schema);

// Shape inference of adam and adamw.
void AdamShape(ShapeContext& ctx);

// The CPU kernel of adam (decoupled_decay false) and adamw (true: reads the
// weight_decay attribute; refuses a sparse Grad).
void RunAdamKernel(KernelContext& ctx, bool decoupled_decay);

}  // namespace rill
