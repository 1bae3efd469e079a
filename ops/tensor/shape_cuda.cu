// Device code of the shape ops (shape_cuda.h). Grid-stride loops: one launch
// covers any size with a bounded grid.
#include "ops/cuda_device_math.cuh"
#include "ops/tensor/shape_cuda.h"

namespace rill::cuda {
namespace {

// Row r's word w: dst row r = src row r, or zeros where src is null.
template <class Word>
__global__ void CopyRowsKernel(char* dst, int64_t dst_pitch, const char* src, int64_t src_pitch,
                               int64_t words_per_row, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t r = i / words_per_row;
    const int64_t w = i - r * words_per_row;
    Word* d = reinterpret_cast<Word*>(dst + r * dst_pitch) + w;
    *d = src == nullptr ? Word{} : reinterpret_cast<const Word*>(src + r * src_pitch)[w];
  }
}

template <class Word>
cudaError_t LaunchCopyRows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                           int64_t width, int64_t height, cudaStream_t stream) {
  const int64_t words = width / static_cast<int64_t>(sizeof(Word));
  const int64_t n = words * height;
  CopyRowsKernel<Word><<<Blocks(n), kThreads, 0, stream>>>(
      static_cast<char*>(dst), dst_pitch, static_cast<const char*>(src), src_pitch, words, n);
  return cudaGetLastError();
}

// Out's dims after merging, and the step in the input (in elements) along each.
struct Permutation {
  int rank;
  int64_t dims[kMaxTransposeDims];
  int64_t strides[kMaxTransposeDims];
};

// out[i] = in[offset of out's multi-index i]: the index math per output element.
template <class Word>
__global__ void TransposeKernel(const Word* in, Word* out, Permutation p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t rest = i;
    int64_t offset = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rest / p.dims[d];
      offset += (rest - q * p.dims[d]) * p.strides[d];
      rest = q;
    }
    out[i] = in[offset];
  }
}

}  // namespace

cudaError_t CopyRows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                     int64_t width, int64_t height, cudaStream_t stream) {
  if (width <= 0 || height <= 0) return cudaSuccess;
  // Rows that follow each other in both: one copy.
  if (height == 1 || (dst_pitch == width && (src == nullptr || src_pitch == width))) {
    const size_t bytes = static_cast<size_t>(width) * static_cast<size_t>(height);
    return src == nullptr ? cudaMemsetAsync(dst, 0, bytes, stream)
                          : cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
  }
  uint64_t bits = reinterpret_cast<uintptr_t>(dst) | static_cast<uint64_t>(dst_pitch) |
                  static_cast<uint64_t>(width);
  if (src != nullptr) bits |= reinterpret_cast<uintptr_t>(src) | static_cast<uint64_t>(src_pitch);
  if (bits % 16 == 0) {
    return LaunchCopyRows<uint4>(dst, dst_pitch, src, src_pitch, width, height, stream);
  }
  if (bits % 8 == 0) {
    return LaunchCopyRows<uint64_t>(dst, dst_pitch, src, src_pitch, width, height, stream);
  }
  if (bits % 4 == 0) {
    return LaunchCopyRows<uint32_t>(dst, dst_pitch, src, src_pitch, width, height, stream);
  }
  if (bits % 2 == 0) {
    return LaunchCopyRows<uint16_t>(dst, dst_pitch, src, src_pitch, width, height, stream);
  }
  return LaunchCopyRows<uint8_t>(dst, dst_pitch, src, src_pitch, width, height, stream);
}

cudaError_t Transpose(const void* in, void* out, const int64_t* in_dims, const int64_t* perm,
                      int rank, int elem_bytes, cudaStream_t stream) {
  int64_t in_strides[kMaxTransposeDims];
  int64_t n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = n;
    n *= in_dims[d];
  }
  if (n == 0) return cudaSuccess;
  // Out's dims in order, leaving out those of size 1 and merging a dim into
  // the one before it where stepping along both is one run in the input.
  Permutation p{};
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = in_dims[perm[i]];
    const int64_t stride = in_strides[perm[i]];
    if (dim == 1) continue;
    if (p.rank > 0 && p.strides[p.rank - 1] == dim * stride) {
      p.dims[p.rank - 1] *= dim;
      p.strides[p.rank - 1] = stride;
    } else {
      p.dims[p.rank] = dim;
      p.strides[p.rank] = stride;
      ++p.rank;
    }
  }
  if (p.rank == 0 || (p.rank == 1 && p.strides[0] == 1)) {  // the identity: a copy
    return cudaMemcpyAsync(out, in, static_cast<size_t>(n) * static_cast<size_t>(elem_bytes),
                           cudaMemcpyDeviceToDevice, stream);
  }
  if (elem_bytes == 8) {
    TransposeKernel<uint64_t><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), p, n);
  } else {
    TransposeKernel<uint32_t><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), p, n);
  }
  return cudaGetLastError();
}

}  // namespace rill::cuda
