// CUDA kernels of batch_norm and layer_norm (and their gradients), as plain
// launchers: this header is included by norm_cuda.cu (nvcc, C++17) and by the
// glue in norm_op_cuda.cc (C++20), so it holds only what both read alike.
//
// The sums over a channel (batch_norm) or a row (layer_norm) are block tree
// reductions, in another order than the CPU kernels' lane sums: the batch
// statistics, and what depends on them, differ from the CPU's in the last
// bits. Everything else is the CPU's arithmetic in its order, each operation
// rounded on its own (no FMA): inference-mode batch_norm and layer_norm's
// Scale@GRAD and Bias@GRAD (summed row after row, as on the CPU) agree exactly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// X as [n, c, hw]. batch_norm_op.cc: training (is_test false) normalises with
// the batch's mean and biased variance and writes mean_out = momentum * mean_in
// + (1 - momentum) * batch mean (var_out likewise); inference normalises with
// mean_in and var_in and copies them out. saved_inv_std = 1 / sqrt(var + eps).
// mean_out may be mean_in, var_out var_in, y x.
template <class T>
void BatchNorm(const T* x, const T* scale, const T* bias, const T* mean_in, const T* var_in, T* y,
               T* mean_out, T* var_out, T* saved_mean, T* saved_inv_std, int64_t n, int64_t c,
               int64_t hw, T momentum, T epsilon, bool is_test, cudaStream_t stream);
// batch_norm_grad: dscale = sum(dy * (x - mean)) * inv_std, dbias = sum(dy)
// per channel, dx as in batch_norm_op.cc. dy non-null (the glue zeroes the
// outputs without it); dx, dscale and dbias may each be null (not wanted);
// dx may be dy.
template <class T>
void BatchNormGrad(const T* x, const T* scale, const T* saved_mean, const T* saved_inv_std,
                   const T* dy, T* dx, T* dscale, T* dbias, int64_t n, int64_t c, int64_t hw,
                   bool is_test, cudaStream_t stream);

// layer_norm_op.cc over rows x cols: scale and bias may be null (1 and 0).
template <class T>
void LayerNorm(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var, int64_t rows,
               int64_t cols, T epsilon, cudaStream_t stream);
// layer_norm_grad: dx per row (may be null; may be dy), dscale and dbias over
// the rows (each may be null). dy non-null; scale may be null (1).
template <class T>
void LayerNormGrad(const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx,
                   T* dscale, T* dbias, int64_t rows, int64_t cols, T epsilon, cudaStream_t stream);

}  // namespace rill::cuda
