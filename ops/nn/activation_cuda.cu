// Device code of the activation ops (activation_cuda.h). Grid-stride loops:
// one launch covers any n with a bounded grid.
#include "ops/nn/activation_cuda.h"

namespace rill::cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

template <class T>
__global__ void ReluKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = x[i] > T(0) ? x[i] : T(0);
  }
}

template <class T>
__global__ void ReluGradKernel(const T* y, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = (dy != nullptr && y[i] > T(0)) ? dy[i] : T(0);
  }
}

}  // namespace

template <class T>
void Relu(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n > 0) ReluKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
}

template <class T>
void ReluGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) ReluGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(y, dy, dx, n);
}

template void Relu<float>(const float*, float*, int64_t, cudaStream_t);
template void Relu<double>(const double*, double*, int64_t, cudaStream_t);
template void ReluGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void ReluGrad<double>(const double*, const double*, double*, int64_t, cudaStream_t);

}  // namespace rill::cuda
