// CUDA kernels of pool2d and pool2d_grad (pool2d_op.cc), as plain launchers:
// this header is included by pool_cuda.cu (nvcc, C++17) and by the glue in
// pool_op_cuda.cc (C++20), so it holds only what both read alike. A run's
// window sweep is window2d.h's PoolGeometry, as the CPU kernels' is.
//
// Bit for bit the CPU's results:
// - pool2d: one thread per output runs the CPU's window scan: max takes the
//   first largest element in scan order (rows, then columns; a NaN first
//   element wins, later NaNs never do), avg sums the window from 0 row by row
//   and divides by the window's count (exclusive) or kernel_h * kernel_w;
// - pool2d_grad: one thread per input element gathers, from 0 and in the
//   CPU's window order (output rows, then columns), what the windows that
//   cover it send it: max, dOut of each window whose first largest element
//   (recomputed from X, as on the CPU) it is; avg, dOut / count of each. No
//   atomics: deterministic. A plane pooled by a single window (global pooling)
//   takes max's argmax with a block per plane instead.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/nn/window2d.h"

namespace rill::cuda {

// Out ([batch, channels, out_h, out_w]) from X ([batch, channels, height, width]).
template <class T>
void Pool2d(const T* x, T* out, const PoolGeometry& s, cudaStream_t stream);

// X@GRAD from X and Out@GRAD (dout null: zeros).
template <class T>
void Pool2dGrad(const T* x, const T* dout, T* dx, const PoolGeometry& s, cudaStream_t stream);

}  // namespace rill::cuda
