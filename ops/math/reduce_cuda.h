// CUDA kernels of mean, mean_grad and sum, as plain launchers: this header is
// included by reduce_cuda.cu (nvcc, C++17) and by the kernels' glue in
// reduce_op_cuda.cc (C++20), so it holds only what both read alike. Every
// operation is rounded on its own, and mean adds in the CPU loop's order (one
// thread, sequentially), so the results equal the CPU kernels' bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// out[0] = (0 + x[0] + x[1] + ... + x[n-1]) / n_as_t, added left to right by
// one thread (the CPU's order: exact, but serial); n 0 gives 0 / 0 = NaN.
template <class T>
void Mean(const T* x, T* out, int64_t n, T n_as_t, cudaStream_t stream);

// dx[i] = dout[0] / n_as_t for i < n; dout null: 0 / n_as_t.
template <class T>
void MeanGrad(const T* dout, T* dx, int64_t n, T n_as_t, cudaStream_t stream);

// Out = the sum of `count` inputs xs[0..count) (xs a host array of device
// pointers), as sum_op.cc: in_place < 0: out = xs[0] + xs[1] + ... left to
// right; in_place = k (out is xs[k]): out = xs[k] + xs[0] + ... skipping k.
// An input that is `out` itself adds the running sum (out += out).
template <class T>
void Sum(const T* const* xs, int count, int in_place, T* out, int64_t n, cudaStream_t stream);

}  // namespace rill::cuda
