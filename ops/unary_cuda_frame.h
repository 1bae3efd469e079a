// The host glue of CUDA kernels computing one output elementwise from one
// input (unary_op_cuda.cc, activation_op_cuda.cc): host C++20, included only
// by .cc glue. The checks, pointers and allocation are the CPU kernels' own
// frames (ops/math/unary.h, ops/nn/activation_grad.h), run with outputs on
// the op's device; the launchers run on the stream the executor is launching
// on (CudaStream::Current()). A failed launch throws `what`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/math/unary.h"
#include "ops/nn/activation_grad.h"
#include "rill/kernel_context.h"
#include "runtime/device/cuda_stream.h"

namespace rill {

// Out = launch(X): launch(x, out, n, stream), as UnaryForward.
template <class Launch>
void UnaryForwardCuda(KernelContext& ctx, const char* what, Launch launch) {
  UnaryForwardFrame(ctx, ctx.place(), [&](const auto* x, auto* out, int64_t n) {
    launch(x, out, n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), what);
}

// X@GRAD = launch(v, Out@GRAD) with v read from `from` ("X" or "Out"), as
// UnaryBackward: launch(v, dout, dx, n, stream), dout null when Out@GRAD is
// missing (zeros).
template <class Launch>
void UnaryBackwardCuda(KernelContext& ctx, const char* from, const char* what, Launch launch) {
  UnaryBackwardFrame(ctx, from, ctx.place(),
                     [&](const auto* v, const auto* dout, auto* dx, int64_t n) {
                       launch(v, dout, dx, n, CudaStream::Current());
                     });
  CheckCuda(cudaGetLastError(), what);
}

// X@GRAD = launch(Out, Out@GRAD), as ActivationBackward (relu, sigmoid, tanh):
// launch(out, dout, dx, n, stream), dout null when Out@GRAD is missing (zeros).
template <class Launch>
void ActivationBackwardCuda(KernelContext& ctx, const char* what, Launch launch) {
  ActivationGradFrame(ctx, ctx.place(),
                      [&](const auto* out, const auto* dout, auto* dx, int64_t n) {
                        launch(out, dout, dx, n, CudaStream::Current());
                      });
  CheckCuda(cudaGetLastError(), what);
}

}  // namespace rill
