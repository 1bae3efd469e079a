// CUDA kernels of the unary elementwise math ops (scale, sqrt, square), as
// plain launchers: this header is included by unary_cuda.cu (nvcc, C++17) and
// by the kernels' glue in unary_op_cuda.cc (C++20), so it holds only what both
// read alike. Every operation is rounded on its own as on the CPU (no FMA
// contraction), so the results equal the CPU kernels' bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// y = scale * x + bias (bias_after_scale) or scale * (x + bias)
template <class T>
void Scale(const T* x, T* y, int64_t n, T scale, T bias, bool bias_after_scale,
           cudaStream_t stream);

// y = sqrt(x) (NaN for negative x)
template <class T>
void Sqrt(const T* x, T* y, int64_t n, cudaStream_t stream);
// dx = dy / (2 * y); dy null: zeros
template <class T>
void SqrtGrad(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

// y = x * x
template <class T>
void Square(const T* x, T* y, int64_t n, cudaStream_t stream);
// dx = (2 * x) * dy; dy null: zeros
template <class T>
void SquareGrad(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream);

}  // namespace rill::cuda
