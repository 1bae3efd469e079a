// The gradient of the activations whose derivative reads their output (relu,
// sigmoid, tanh): X@GRAD = g(Out, Out@GRAD). The frame (checks, pointers,
// X@GRAD allocated on a place) is shared by their CPU kernels and their CUDA
// kernels (activation_op_cuda.cc).
#pragma once

#include "rill/kernel_context.h"

namespace rill {

// Checks the type of Out first, then (only when Out@GRAD is there) that
// Out@GRAD has Out's shape; allocates X@GRAD like Out on `place` and calls
// body(out, dout, dx, n) with pointers of Out's type, dout null when Out@GRAD
// is missing (zero). The pointers are read before X@GRAD is allocated
// (X@GRAD may be Out@GRAD). Nothing when X@GRAD is unbound.
template <class Body>
void ActivationGradFrame(KernelContext& ctx, Place place, Body body) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = ctx.Input("Out");
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(y.dtype(), [&]<class T>() {
    const T* out = y.data<T>();
    const Shape shape = y.shape();
    const int64_t n = y.numel();
    const T* dy = nullptr;
    if (has_dy) {
      const Tensor& dy_t = ctx.Input("Out@GRAD");
      RILL_CHECK(dy_t.shape() == y.shape(), kInvalidArgument, "Out@GRAD has shape ",
                 ShapeToString(dy_t.shape()), " but Out has shape ", ShapeToString(y.shape()));
      dy = dy_t.data<T>();
    }
    dx->Allocate(DataTypeOf<T>(), shape, place);
    body(out, dy, dx->mutable_data<T>(), n);
  });
}

// The CPU kernel: X@GRAD[i] = g(Out[i], Out@GRAD[i]); zeros when Out@GRAD is
// missing.
template <class G>
void ActivationBackward(KernelContext& ctx, G g) {
  ActivationGradFrame(ctx, Place::Cpu(), [&]<class T>(const T* out, const T* dy, T* dx, int64_t n) {
    if (!dy) {
      for (int64_t i = 0; i < n; ++i) dx[i] = T(0);
      return;
    }
    for (int64_t i = 0; i < n; ++i) dx[i] = g(out[i], dy[i]);
  });
}

}  // namespace rill
