// Device code of the unary elementwise math ops (unary_cuda.h). Grid-stride
// loops: one launch covers any n with a bounded grid.
#include "ops/cuda_device_math.cuh"
#include "ops/math/unary_cuda.h"

namespace rill::cuda {
namespace {

template <class T>
__global__ void ScaleKernel(const T* x, T* y, int64_t n, T scale, T bias, bool bias_after_scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = bias_after_scale ? Add(Mul(scale, x[i]), bias) : Mul(scale, Add(x[i], bias));
  }
}

template <class T>
__global__ void SqrtKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = SqrtOf(x[i]);
  }
}

template <class T>
__global__ void SqrtGradKernel(const T* y, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = dy != nullptr ? Div(dy[i], Mul(T(2), y[i])) : T(0);
  }
}

template <class T>
__global__ void SquareKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = Mul(x[i], x[i]);
  }
}

template <class T>
__global__ void SquareGradKernel(const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = dy != nullptr ? Mul(Mul(T(2), x[i]), dy[i]) : T(0);
  }
}

}  // namespace

template <class T>
void Scale(const T* x, T* y, int64_t n, T scale, T bias, bool bias_after_scale,
           cudaStream_t stream) {
  if (n > 0) {
    ScaleKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, n, scale, bias, bias_after_scale);
  }
}

template <class T>
void Sqrt(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n > 0) SqrtKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
}

template <class T>
void SqrtGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) SqrtGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(y, dy, dx, n);
}

template <class T>
void Square(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n > 0) SquareKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
}

template <class T>
void SquareGrad(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) SquareGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, dy, dx, n);
}

template void Scale<float>(const float*, float*, int64_t, float, float, bool, cudaStream_t);
template void Scale<double>(const double*, double*, int64_t, double, double, bool, cudaStream_t);
template void Sqrt<float>(const float*, float*, int64_t, cudaStream_t);
template void Sqrt<double>(const double*, double*, int64_t, cudaStream_t);
template void SqrtGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void SqrtGrad<double>(const double*, const double*, double*, int64_t, cudaStream_t);
template void Square<float>(const float*, float*, int64_t, cudaStream_t);
template void Square<double>(const double*, double*, int64_t, cudaStream_t);
template void SquareGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void SquareGrad<double>(const double*, const double*, double*, int64_t, cudaStream_t);

}  // namespace rill::cuda
