// Loops shared by the ops that reduce a whole tensor to one element (mean,
// squared_l2_norm): Out [1] = finish(sum of term(x), n), and the gradient
// X@GRAD = grad(x, Out@GRAD[0], n) elementwise.
#pragma once

#include "rill/kernel_context.h"

namespace rill {

template <class Term, class Finish>
void ReduceToOneForward(KernelContext& ctx, Term term, Finish finish) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    T sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += term(in[i]);
    out->Allocate<T>({1})[0] = finish(sum, n);
  });
}

// A missing Out@GRAD means zero.
template <class Grad>
void ReduceToOneBackward(KernelContext& ctx, Grad grad) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const bool has_dout = ctx.InputReady("Out@GRAD");
  Tensor* dx_t = ctx.Output("X@GRAD");
  VisitFloatType(x.dtype(), [&]<class T>() {
    T dout = 0;
    if (has_dout) {
      const Tensor& d = ctx.Input("Out@GRAD");
      RILL_CHECK(d.numel() == 1, kInvalidArgument, "Out@GRAD must hold one element, is ",
                 d.Describe());
      dout = d.data<T>()[0];
    }
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    T* dx = dx_t->Allocate<T>(shape);
    for (int64_t i = 0; i < n; ++i) dx[i] = grad(in[i], dout, n);
  });
}

inline void ReduceToOneShape(ShapeContext& ctx) { ctx.SetOutput("Out", {1}, ctx.InputType("X")); }

inline void ReduceToOneGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

}  // namespace rill
