// CUDA kernels of squared_l2_norm, squared_l2_norm_grad and less_than, as
// plain launchers: this header is included by norm_compare_cuda.cu (nvcc,
// C++17) and by the kernels' glue in norm_compare_op_cuda.cc (C++20), so it
// holds only what both read alike. Each result equals the CPU kernel's bit
// for bit: every operation is rounded on its own (no FMA), the norm adds its
// squares in the CPU loop's order, and less_than compares as the CPU does.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// out[0] = (0 + x[0]*x[0] + x[1]*x[1] + ... + x[n-1]*x[n-1]) in T, added left
// to right as ReduceToOneForward does (n 0 gives 0). The squares are taken
// by a block of threads a tile at a time; one thread adds them in order.
template <class T>
void SquaredL2Norm(const T* x, T* out, int64_t n, cudaStream_t stream);

// dx[i] = 2 * dout[0] * x[i], evaluated as (2 * dout[0]) * x[i] as on the
// CPU; dout null reads as 0 (so an infinite or NaN x gives NaN, as there).
template <class T>
void SquaredL2NormGrad(const T* x, const T* dout, T* dx, int64_t n, cudaStream_t stream);

// out[i] = double(x[i]) < double(y[broadcast_y ? 0 : i]) ? 1 : 0, the CPU's
// comparison: both sides converted to double first (exact for float32, int32
// and int64 up to 2^53; larger int64 round to nearest on both sides alike).
// Defined for float, double, int32_t and int64_t.
template <class T>
void LessThan(const T* x, const T* y, bool broadcast_y, int32_t* out, int64_t n,
              cudaStream_t stream);

}  // namespace rill::cuda
