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

// IEEE-rounded arithmetic, one rounding per operation as on the CPU (x86-64
// without FMA): nvcc would otherwise contract a * b + c into an FMA, and the
// gradients would differ from the CPU's in the last bit.
__device__ __forceinline__ float Add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double Add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float Sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double Sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float Mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double Mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float Div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double Div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float Exp(float a) { return expf(a); }
__device__ __forceinline__ double Exp(double a) { return exp(a); }
__device__ __forceinline__ float TanhOf(float a) { return tanhf(a); }
__device__ __forceinline__ double TanhOf(double a) { return tanh(a); }

template <class T>
__global__ void SigmoidKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = Div(T(1), Add(T(1), Exp(-x[i])));
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

}  // namespace rill::cuda
