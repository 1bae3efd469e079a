// CUDA kernels of lookup_table, lookup_table_grad, dropout and dropout_grad,
// as plain launchers: this header is included by embedding_dropout_cuda.cu
// (nvcc, C++17) and by the glue in embedding_dropout_op_cuda.cc (C++20), so
// it holds only what both read alike.
//
// What cannot be done on the device is done by the glue on the host: the ids
// are checked there (they are copied back first), the grouping of repeated
// ids for the dense gradient is built there, and dropout's mask is drawn there
// from the op's generator, exactly as the CPU kernels draw it. The kernels
// here only move and multiply, each operation rounded on its own, so every
// result is bit for bit the CPU's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// lookup_table_op.cc: out row i = table row ids[i], zeros where ids[i] is
// padding_idx (padding_idx < 0: none). Every other id must be a row of the
// table: the glue checks them before the launch. out is [n, width].
template <class T>
void LookupRows(const T* table, const int64_t* ids, int64_t n, int64_t width, int64_t padding_idx,
                T* out, cudaStream_t stream);

// out row k = src row positions[k], for k in [0, count); rows of width.
// The values of lookup_table_grad's selected rows (positions: the ids' rows of
// Out@GRAD that are not padding).
template <class T>
void GatherRows(const T* src, const int64_t* positions, int64_t count, int64_t width, T* out,
                cudaStream_t stream);

// The dense lookup_table_grad, in groups: group g adds the Out@GRAD rows
// positions[offsets[g], offsets[g + 1]) (increasing, as the CPU's loop over
// the ids meets them) into dw row rows[g], starting from 0, one column per
// thread, so every sum is taken in the CPU's order. Rows in no group are left
// as they are (the glue zeroes dw first). offsets has groups + 1 entries.
template <class T>
void SumRowsInOrder(const T* dy, const int64_t* rows, const int64_t* offsets,
                    const int64_t* positions, int64_t groups, int64_t width, T* dw,
                    cudaStream_t stream);

// out[i] = x[i] * mask[i]: dropout in training (the mask drawn on the host)
// and dropout_grad (x: Out@GRAD). out may be x.
template <class T>
void MultiplyByMask(const T* x, const T* mask, T* out, int64_t n, cudaStream_t stream);

// Dropout at test time: out[i] = x[i] * keep and, when mask is not null,
// mask[i] = keep. out may be x.
template <class T>
void ScaleAndFillMask(const T* x, T keep, T* out, T* mask, int64_t n, cudaStream_t stream);

}  // namespace rill::cuda
