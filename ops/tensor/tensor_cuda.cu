// Device code of the tensor ops (tensor_cuda.h). Grid-stride loops: one launch
// covers any n with a bounded grid.
#include "ops/cuda_device_math.cuh"
#include "ops/tensor/tensor_cuda.h"

namespace rill::cuda {
namespace {

template <class T>
__global__ void FillKernel(T* out, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = value;
  }
}

}  // namespace

template <class T>
void Fill(T* out, T value, int64_t n, cudaStream_t stream) {
  if (n > 0) FillKernel<T><<<Blocks(n), kThreads, 0, stream>>>(out, value, n);
}

cudaError_t Zero(void* out, size_t bytes, cudaStream_t stream) {
  return bytes > 0 ? cudaMemsetAsync(out, 0, bytes, stream) : cudaSuccess;
}

cudaError_t Copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return cudaSuccess;
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
}

template void Fill<float>(float*, float, int64_t, cudaStream_t);
template void Fill<double>(double*, double, int64_t, cudaStream_t);
template void Fill<int32_t>(int32_t*, int32_t, int64_t, cudaStream_t);
template void Fill<int64_t>(int64_t*, int64_t, int64_t, cudaStream_t);

}  // namespace rill::cuda
