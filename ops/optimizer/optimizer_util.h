// Helpers the optimizer ops share: reading their scalar inputs, and their
// gradient, which may be dense or (from an embedding with is_sparse) selected rows.
#pragma once

#include "runtime/kernel_context.h"
#include "runtime/selected_rows.h"

namespace rill {

// A float32 such as 0.001f stands for the decimal 0.001: widening it through
// its shortest decimal form gives the double a Python user would have written.
double DecimalDouble(float f);

// The value of a one-element float32/float64 tensor (the learning rate, beta^t).
double ReadScalar(const Tensor& t, const char* slot);

// The Grad input as selected rows merged (each row once, repeats summed),
// checked against Param: its height is Param's rows and its rows are Param's
// row shape. Call only when ctx.InputIsSelectedRows("Grad").
SelectedRows SparseGrad(const KernelContext& ctx, const Tensor& param);

}  // namespace rill
