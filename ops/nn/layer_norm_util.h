// What layer_norm's and layer_norm_grad's kernels read and check: one copy
// for the CPU kernels (layer_norm_op.cc) and the CUDA kernels' host glue
// (layer_norm_op_cuda.cc), so both accept the same inputs and fail with the
// same messages. Stateless.
#pragma once

#include <cstdint>
#include <string>

#include "rill/kernel_context.h"
#include "rill/shape.h"

namespace rill {

// X seen as a matrix: the dims before begin_norm_axis are its rows, the rest
// its columns (each row is normalised on its own).
struct LayerNormDims {
  int64_t rows = 0;
  int64_t cols = 0;
};

// Throws kInvalidArgument, naming `op` and X, unless 1 <= axis < rank of X.
// Dims of -1 (shape inference) make rows or cols -1.
LayerNormDims LayerNormDimsOf(const char* op, const std::string& x_name, const Shape& x,
                              int64_t axis);

// The inputs of layer_norm (grad false) or layer_norm_grad, checked: Scale
// and Bias (null when absent) are [cols] of X's type; for the gradient, Mean
// and Variance are [rows] and Y@GRAD (null when absent: zero) has X's shape.
struct LayerNormRun {
  const Tensor* x = nullptr;
  const Tensor* scale = nullptr;
  const Tensor* bias = nullptr;
  const Tensor* mean = nullptr;
  const Tensor* variance = nullptr;
  const Tensor* dy = nullptr;
  LayerNormDims dims;
  float epsilon = 1e-5f;
};
LayerNormRun CheckLayerNormKernel(const KernelContext& ctx, bool grad);

}  // namespace rill
