// The input checks of less_than, shared by its CPU kernel (less_than_op.cc)
// and its CUDA kernel (norm_compare_op_cuda.cc): one order, one wording.
#pragma once

#include "rill/tensor.h"

namespace rill {

// Throws kInvalidArgument unless Y has X's shape or one element, then unless
// X and Y have one type.
void CheckLessThanInputs(const Tensor& x, const Tensor& y);

}  // namespace rill
