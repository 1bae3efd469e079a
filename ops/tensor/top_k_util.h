// What top_k's CPU kernels (top_k_op.cc) and CUDA kernels (top_k_op_cuda.cc)
// share: X seen as rows of its last dim, and the inputs read and checked in
// the same order with the same messages on every place.
#pragma once

#include <cstdint>

#include "rill/kernel_context.h"

namespace rill {

// Rows with k up to this take the insertion scan (no scratch memory).
inline constexpr int64_t kTopKInsertionMaxK = 16;

// top_k's X as `rows` rows of its last dim (`cols`), k values picked from each.
struct TopKDims {
  Shape out_shape;  // X's shape with the last dim k: Out's and Indices'
  int64_t rows;
  int64_t cols;
  int64_t k;
};
// Throws kInvalidArgument for X of rank 0 or k outside [1, cols].
TopKDims TopKForwardDims(const Tensor& x, int64_t k);

// top_k_grad's inputs and output.
struct TopKGradArgs {
  DataType dtype;  // X's: float32 or float64
  Shape shape;     // X's: X@GRAD's
  int64_t rows;
  int64_t cols;
  int64_t k;  // Indices' last dim
  const Tensor& indices;
  const int64_t* idx;  // Indices' values (int64)
  const Tensor* dout;  // Out@GRAD, null when absent (zero)
  Tensor* dx;          // X@GRAD
};
// Reads them. Throws kInvalidArgument unless Indices holds k values per row
// of X, X is float32 or float64 (VisitFloatType's kUnimplemented error),
// Indices is int64 and Out@GRAD, when present, holds k values per row.
TopKGradArgs ReadTopKGradArgs(KernelContext& ctx);

// Throws kOutOfRange unless `index`, picked in row `row`, is in [0, cols).
void CheckTopKIndex(int64_t index, int64_t row, int64_t cols);

}  // namespace rill
