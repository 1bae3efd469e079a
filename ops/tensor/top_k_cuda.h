// CUDA kernels of top_k and top_k_grad (top_k_op.cc), as plain launchers:
// this header is included by top_k_cuda.cu (nvcc, C++17) and by the glue in
// top_k_op_cuda.cc (C++20), so it holds only what both read alike.
//
// Rows are the last axis (cols elements each). top_k gives each row's k
// largest values, descending, equal values in their order in the row
// (earlier first), as the CPU kernel does, with its int64 column indices:
// - k <= kTopKInsertionMaxK: the CPU kernel's insertion scan step for step,
//   one thread per row, so even rows holding NaN come out as on the CPU;
// - larger k: a stable sort of each row on a key that orders the values
//   descending (-0 and +0 equal), the CPU's order wherever it is defined.
//   With NaN in the row the CPU's order is not (std::partial_sort needs a
//   strict weak order); here a NaN with the sign bit clear sorts above +inf
//   and one with it set below -inf.
// top_k_grad scatters Out@GRAD into zeros at the indices, adding in the
// CPU's order (one thread per row), so the results equal the CPU's bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace rill::cuda {

// The largest k the insertion scan takes: rill::kTopKInsertionMaxK of
// top_k_util.h (not includable here; top_k_op_cuda.cc asserts they agree).
inline constexpr int64_t kTopKInsertionMaxK = 16;

// values, indices [rows, k] = each row's k largest by the CPU's insertion
// scan; k in [1, min(cols, kTopKInsertionMaxK)]. Check cudaGetLastError after.
template <class T>
void TopKByInsertion(const T* x, int64_t rows, int64_t cols, int64_t k, T* values, int64_t* indices,
                     cudaStream_t stream);

// *bytes = the device scratch TopKBySort needs for rows of cols.
cudaError_t TopKSortScratchBytes(int64_t rows, int64_t cols, size_t* bytes);

// values, indices [rows, k] = each row's k largest, by sorting every row;
// k in [1, cols]. `scratch` holds TopKSortScratchBytes bytes and must stay
// allocated until the stream has done the work.
template <class T>
cudaError_t TopKBySort(const T* x, int64_t rows, int64_t cols, int64_t k, T* values,
                       int64_t* indices, void* scratch, size_t scratch_bytes, cudaStream_t stream);

// What `bad_position` holds when every index is in range (memset byte 0x7f).
inline constexpr int64_t kNoBadPosition = 0x7f7f7f7f7f7f7f7fLL;

// dx[r, indices[r, j]] += dout[r, j] for j = 0, 1, ... in order, per row of
// dx [rows, cols] (zeros beforehand). An index outside [0, cols) is skipped
// with the rest of its row, and the smallest such position r * k + j is left
// in the device int64 `bad_position` (set to kNoBadPosition first). Check
// cudaGetLastError after.
template <class T>
void TopKGrad(const int64_t* indices, const T* dout, T* dx, int64_t rows, int64_t cols, int64_t k,
              int64_t* bad_position, cudaStream_t stream);

}  // namespace rill::cuda
