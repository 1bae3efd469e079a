// Loops shared by the unary elementwise math ops (square, sqrt): the forward
// Out = f(X) and the gradient X@GRAD = g(v, Out@GRAD), where v is read from
// X or from Out, whichever the derivative is cheaper in.
#pragma once

#include "runtime/kernel_context.h"

namespace rill {

template <class F>
void UnaryForward(KernelContext& ctx, F f) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();  // before Allocate: Out may be X
    const Shape shape = x.shape();
    T* o = out->Allocate<T>(shape);
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]);
  });
}

// `from` is "X" or "Out". A missing Out@GRAD means zero.
template <class G>
void UnaryBackward(KernelContext& ctx, const char* from, G g) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& v = ctx.Input(from);
  const bool has_dout = ctx.InputReady("Out@GRAD");
  if (has_dout) {
    const Tensor& d = ctx.Input("Out@GRAD");
    RILL_CHECK(d.shape() == v.shape() && d.dtype() == v.dtype(), kInvalidArgument, "Out@GRAD is ",
               d.Describe(), " but ", from, " is ", v.Describe());
  }
  Tensor* dx_t = ctx.Output("X@GRAD");
  VisitFloatType(v.dtype(), [&]<class T>() {
    const T* in = v.data<T>();
    const T* dout = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const Shape shape = v.shape();
    T* dx = dx_t->Allocate<T>(shape);
    const int64_t n = v.numel();
    for (int64_t i = 0; i < n; ++i) dx[i] = dout ? g(in[i], dout[i]) : T(0);
  });
}

}  // namespace rill
