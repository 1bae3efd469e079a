// CUDA kernels of the binary elementwise math ops (elementwise_add, _sub,
// _mul, _div, _max and their gradients), as plain launchers: this header is
// included by binary_cuda.cu (nvcc, C++17) and by the kernels' glue in
// binary_op_cuda.cc (C++20), so it holds only what both read alike.
//
// Broadcasting as in elementwise.h: X (and Out, Out@GRAD, X@GRAD) viewed as
// [pre, n, post], Y (and Y@GRAD) as [n]. Every operation is rounded on its
// own as on the CPU (no FMA contraction), and Y@GRAD is summed in the CPU's
// order (broadcast_sum.h), so the results equal the CPU kernels' bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMax };

// out[e] = x[e] op y[j], e = (i * n + j) * post + k. max: x > y ? x : y.
template <class T>
void BinaryForward(BinaryOp op, const T* x, const T* y, T* out, int64_t pre, int64_t n,
                   int64_t post, cudaStream_t stream);

// dx[e] = the op's dX term (add, sub: dout; mul: dout * y; div: dout / y;
// max: x > y ? dout : 0); dout null: zeros.
template <class T>
void BinaryGradX(BinaryOp op, const T* x, const T* y, const T* dout, T* dx, int64_t pre, int64_t n,
                 int64_t post, cudaStream_t stream);

// dy[j] = 0 + the op's dY terms (add: dout; sub: -dout; mul: dout * x;
// div: -dout * x / (y * y); max: x > y ? 0 : dout) added in broadcast_sum.h's
// order; dout null: zeros.
// `scratch`: BinaryGradYScratch(pre, n, post) elements of T on the device
// (null when that is 0), where the chunks' partials are kept between the
// two passes; it must stay allocated until the launches have run (the
// caching allocator waits for the stream before reusing a freed block).
template <class T>
void BinaryGradY(BinaryOp op, const T* x, const T* y, const T* dout, T* dy, int64_t pre, int64_t n,
                 int64_t post, T* scratch, cudaStream_t stream);
int64_t BinaryGradYScratch(int64_t pre, int64_t n, int64_t post);

}  // namespace rill::cuda
