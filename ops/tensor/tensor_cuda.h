// CUDA kernels of the tensor ops (fill_constant, fill_zeros_like, assign), as
// plain launchers: this header is included by tensor_cuda.cu (nvcc, C++17) and
// by the kernels' glue in tensor_op_cuda.cc (C++20), so it holds only what both
// read alike.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace rill::cuda {

// out[0, n) = value. Defined for float, double, int32_t and int64_t.
template <class T>
void Fill(T* out, T value, int64_t n, cudaStream_t stream);

// bytes zero bytes at out, queued on the stream.
cudaError_t Zero(void* out, size_t bytes, cudaStream_t stream);

// Copies bytes from src to dst, queued on the stream; either may be device
// memory or host memory (cudaMemcpyDefault).
cudaError_t Copy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace rill::cuda
