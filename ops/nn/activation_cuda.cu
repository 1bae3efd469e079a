// Device code of the activation ops (activation_cuda.h). Grid-stride loops:
// one launch covers any n with a bounded grid.
#include "ops/cuda_device_math.cuh"
#include "ops/nn/activation_cuda.h"

namespace rill::cuda {
namespace {

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

template <class T>
__global__ void SigmoidKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = Div(T(1), Add(T(1), ExpOf(-x[i])));
  }
}

template <class T>
__global__ void SigmoidGradKernel(const T* y, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = dy != nullptr ? Mul(Mul(dy[i], y[i]), Sub(T(1), y[i])) : T(0);
  }
}

template <class T>
__global__ void TanhKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = TanhOf(x[i]);
  }
}

template <class T>
__global__ void TanhGradKernel(const T* y, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = dy != nullptr ? Mul(dy[i], Sub(T(1), Mul(y[i], y[i]))) : T(0);
  }
}

// The constants of gelu_op.cc, rounded to T as the CPU rounds them.
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

template <class T>
__global__ void GeluKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const T v = x[i];
    y[i] = Mul(Mul(T(0.5), v), Add(T(1), ErfOf(Mul(v, static_cast<T>(kInvSqrt2)))));
  }
}

template <class T>
__global__ void GeluGradKernel(const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    if (dy == nullptr) {
      dx[i] = T(0);
      continue;
    }
    const T v = x[i];
    const T cdf = Mul(T(0.5), Add(T(1), ErfOf(Mul(v, static_cast<T>(kInvSqrt2)))));
    const T pdf = Mul(static_cast<T>(kInvSqrt2Pi), ExpOf(Mul(Mul(T(-0.5), v), v)));
    dx[i] = Mul(dy[i], Add(cdf, Mul(v, pdf)));
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

template <class T>
void Sigmoid(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n > 0) SigmoidKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
}

template <class T>
void SigmoidGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) SigmoidGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(y, dy, dx, n);
}

template <class T>
void Tanh(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n > 0) TanhKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
}

template <class T>
void TanhGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) TanhGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(y, dy, dx, n);
}

template <class T>
void Gelu(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n > 0) GeluKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
}

template <class T>
void GeluGrad(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) GeluGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, dy, dx, n);
}

template void Relu<float>(const float*, float*, int64_t, cudaStream_t);
template void Relu<double>(const double*, double*, int64_t, cudaStream_t);
template void ReluGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void ReluGrad<double>(const double*, const double*, double*, int64_t, cudaStream_t);
template void Sigmoid<float>(const float*, float*, int64_t, cudaStream_t);
template void Sigmoid<double>(const double*, double*, int64_t, cudaStream_t);
template void SigmoidGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void SigmoidGrad<double>(const double*, const double*, double*, int64_t, cudaStream_t);
template void Tanh<float>(const float*, float*, int64_t, cudaStream_t);
template void Tanh<double>(const double*, double*, int64_t, cudaStream_t);
template void TanhGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void TanhGrad<double>(const double*, const double*, double*, int64_t, cudaStream_t);
template void Gelu<float>(const float*, float*, int64_t, cudaStream_t);
template void Gelu<double>(const double*, double*, int64_t, cudaStream_t);
template void GeluGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void GeluGrad<double>(const double*, const double*, double*, int64_t, cudaStream_t);

}  // namespace rill::cuda
