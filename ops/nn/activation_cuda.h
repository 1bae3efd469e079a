// CUDA kernels of the activation ops, as plain launchers: this header is
// included by the .cu files (nvcc, C++17) and by the kernels' glue in .cc
// files (C++20), so it holds only what both read alike.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// y = max(x, 0)
template <class T>
void Relu(const T* x, T* y, int64_t n, cudaStream_t stream);
// dx = y > 0 ? dy : 0; dy null: zeros
template <class T>
void ReluGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

// y = 1 / (1 + exp(-x))
template <class T>
void Sigmoid(const T* x, T* y, int64_t n, cudaStream_t stream);
// dx = (dy * y) * (1 - y), rounded step by step (no FMA); dy null: zeros
template <class T>
void SigmoidGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

// y = tanh(x)
template <class T>
void Tanh(const T* x, T* y, int64_t n, cudaStream_t stream);
// dx = dy * (1 - y * y), rounded step by step (no FMA); dy null: zeros
template <class T>
void TanhGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

// y = 0.5 * x * (1 + erf(x / sqrt(2))) (gelu_op.cc)
template <class T>
void Gelu(const T* x, T* y, int64_t n, cudaStream_t stream);
// dx = dy * (0.5 * (1 + erf(x / sqrt(2))) + x * exp(-0.5 * x * x) / sqrt(2 * pi)), rounded
// step by step in the CPU's order (no FMA); dy null: zeros. gelu_grad reads X, not Out.
template <class T>
void GeluGrad(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream);

}  // namespace rill::cuda
