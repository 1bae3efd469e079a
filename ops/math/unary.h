// Loops shared by the unary elementwise math ops (square, sqrt): the forward
// Out = f(X) and the gradient X@GRAD = g(v, Out@GRAD), where v is read from
// X or from Out, whichever the derivative is cheaper in. Their frames (checks,
// pointers, outputs allocated on a place) are shared with the CUDA kernels
// (unary_op_cuda.cc; the forward one also with activation_op_cuda.cc).
#pragma once

#include "rill/kernel_context.h"

namespace rill {

// Allocates Out with X's shape and type on `place` and calls body(x, out, n)
// with pointers of X's type. X's pointer is read before Out is allocated: Out
// may be X.
template <class Body>
void UnaryForwardFrame(KernelContext& ctx, Place place, Body body) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    out->Allocate(DataTypeOf<T>(), shape, place);
    body(in, out->mutable_data<T>(), n);
  });
}

// `from` is "X" or "Out": Out@GRAD, when there, must match it in shape and
// type (checked before its type is). Allocates X@GRAD like v on `place` and
// calls body(v, dout, dx, n) with pointers of v's type, dout null when
// Out@GRAD is missing (zero); nothing when X@GRAD is unbound.
template <class Body>
void UnaryBackwardFrame(KernelContext& ctx, const char* from, Place place, Body body) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& v = ctx.Input(from);
  const bool has_dout = ctx.InputReady("Out@GRAD");
  if (has_dout) {
    const Tensor& d = ctx.Input("Out@GRAD");
    RILL_CHECK(d.shape() == v.shape() && d.dtype() == v.dtype(), kInvalidArgument, "Out@GRAD is ",
               d.Describe(), " but ", from, " is ", v.Describe());
  }
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(v.dtype(), [&]<class T>() {
    const T* in = v.data<T>();
    const T* dout = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const Shape shape = v.shape();
    const int64_t n = v.numel();
    dx->Allocate(DataTypeOf<T>(), shape, place);
    body(in, dout, dx->mutable_data<T>(), n);
  });
}

template <class F>
void UnaryForward(KernelContext& ctx, F f) {
  UnaryForwardFrame(ctx, Place::Cpu(), [&]<class T>(const T* in, T* o, int64_t n) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]);
  });
}

// `from` is "X" or "Out". A missing Out@GRAD means zero.
template <class G>
void UnaryBackward(KernelContext& ctx, const char* from, G g) {
  UnaryBackwardFrame(ctx, from, Place::Cpu(),
                     [&]<class T>(const T* in, const T* dout, T* dx, int64_t n) {
                       for (int64_t i = 0; i < n; ++i) dx[i] = dout ? g(in[i], dout[i]) : T(0);
                     });
}

}  // namespace rill
