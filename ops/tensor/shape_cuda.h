// CUDA kernels of the shape ops (concat, split, transpose and the gradients
// of concat and split), as plain launchers: this header is included by
// shape_cuda.cu (nvcc, C++17) and by the kernels' glue in shape_op_cuda.cc
// (C++20), so it holds only what both read alike. They move bytes and do no
// arithmetic on them, so their results equal the CPU kernels' bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// The most dims Transpose takes (kMaxTransposeRank in shape_util.h).
inline constexpr int kMaxTransposeDims = 16;

// Copies `height` rows of `width` bytes, row r from src + r * src_pitch to
// dst + r * dst_pitch (device memory, not overlapping); a null src writes
// zero bytes instead. Queued on the stream; any alignment (the widest word
// up to 16 bytes that the addresses, pitches and width allow is moved).
// Returns the launch's or the copy's error.
cudaError_t CopyRows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                     int64_t width, int64_t height, cudaStream_t stream);

// out = in with its dims permuted: out's dim i is in's dim perm[i]
// (transpose_op.cc). `in_dims` and `perm` hold `rank` (<= kMaxTransposeDims)
// entries; elements are elem_bytes (4 or 8) wide. Queued on the stream;
// returns the launch's or the copy's error.
cudaError_t Transpose(const void* in, void* out, const int64_t* in_dims, const int64_t* perm,
                      int rank, int elem_bytes, cudaStream_t stream);

}  // namespace rill::cuda
