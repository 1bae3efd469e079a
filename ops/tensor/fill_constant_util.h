// What fill_constant's CPU kernel (fill_constant_op.cc) and CUDA kernel
// (tensor_op_cuda.cc) share: its attributes read and checked the same way on
// every place.
#pragma once

#include "rill/kernel_context.h"

namespace rill {

struct FillConstantAttrs {
  Shape shape;
  DataType dtype;
  // `value` is a float32 attribute; 0.1f stands for the decimal 0.1. Widened
  // through its shortest decimal form (DecimalDouble), it fills float64
  // tensors with 0.1 itself rather than 0.100000001490116 (float32 outputs are
  // unchanged).
  double value;
};
// Reads shape, dtype and value; throws kInvalidArgument for a negative dim.
FillConstantAttrs ReadFillConstantAttrs(const KernelContext& ctx);

}  // namespace rill
