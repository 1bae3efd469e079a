// The machinery shared by the binary elementwise ops (add, sub, mul, div,
// max): how Y broadcasts against X, shape inference, the forward loop, the
// gradient loop with its reduction over broadcast dims, and the schemas.
//
// Broadcasting follows Fluid: Out has X's shape; Y's dims (trailing 1s
// dropped) match X's dims starting at `axis` (-1: aligned with X's trailing
// dims). Seen that way X is [pre, n, post] and Y is [n]. A Y of one element
// broadcasts over all of X.
#pragma once

#include <algorithm>
#include <string>

#include "ops/math/broadcast_sum.h"
#include "ops/math/lane_sum.h"
#include "rill/kernel_context.h"
#include "rill/op_schema.h"
#include "rill/shape_context.h"

namespace rill {

// X viewed as [pre, n, post], Y as [n].
struct BroadcastSplit {
  int64_t pre = 1;
  int64_t n = 1;
  int64_t post = 1;
};

// Checks that Y broadcasts against X at `axis`; throws kInvalidArgument saying
// which dims disagree. Dims of -1 (unknown until run time) match anything.
BroadcastSplit SplitForBroadcast(const Shape& x, const Shape& y, int axis);

// Calls body(e, j) for every element e of X, j being the element of Y it
// meets. The post == 1 case (a bias over the last dim) gets a loop of its own
// so that it vectorizes.
template <class Body>
void ForEachBroadcastElement(const BroadcastSplit& s, Body body) {
  if (s.post == 1) {
    for (int64_t i = 0; i < s.pre; ++i) {
      for (int64_t j = 0; j < s.n; ++j) body(i * s.n + j, j);
    }
    return;
  }
  for (int64_t i = 0; i < s.pre; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      const int64_t base = (i * s.n + j) * s.post;
      for (int64_t k = 0; k < s.post; ++k) body(base + k, j);
    }
  }
}

// The forward op's frame, shared by the CPU kernels (ElementwiseForward) and
// the CUDA ones (binary_op_cuda.cc): checks X and Y (one type; Y broadcasts
// against X at `axis`), allocates Out with X's shape on `place` and calls
// body(x, y, out, split) with pointers of X's type. X's and Y's pointers are
// read before Out is allocated: Out may be X (in-place update).
template <class Body>
void ElementwiseForwardFrame(KernelContext& ctx, Place place, Body body) {
  const Tensor& x_t = ctx.Input("X");
  const Tensor& y_t = ctx.Input("Y");
  RILL_CHECK(x_t.dtype() == y_t.dtype(), kInvalidArgument, "X is ", x_t.Describe(), " but Y is ",
             y_t.Describe(), ": types differ");
  const BroadcastSplit s = SplitForBroadcast(x_t.shape(), y_t.shape(), ctx.Attr<int>("axis"));
  Tensor* out_t = ctx.Output("Out");
  VisitFloatType(x_t.dtype(), [&]<class T>() {
    const T* x = x_t.data<T>();
    const T* y = y_t.data<T>();
    const Shape shape = x_t.shape();
    out_t->Allocate(DataTypeOf<T>(), shape, place);
    body(x, y, out_t->mutable_data<T>(), s);
  });
}

// The forward op: Out = f(X, Y). f(x, y) is a generic lambda.
template <class F>
void ElementwiseForward(KernelContext& ctx, F f) {
  ElementwiseForwardFrame(
      ctx, Place::Cpu(), [&]<class T>(const T* x, const T* y, T* out, const BroadcastSplit& s) {
        ForEachBroadcastElement(s, [&](int64_t e, int64_t j) { out[e] = f(x[e], y[j]); });
      });
}

// The gradient op's frame, shared by the CPU kernels (ElementwiseBackward) and
// the CUDA ones: checks X, Y and Out@GRAD (which must be X's shape and type
// when there), allocates on `place` the gradient outputs the op binds
// (X@GRAD, then Y@GRAD) and calls body(x, y, dout, dx, dy, split) with
// pointers of X's type: dout null when Out@GRAD is missing (zero), dx or dy
// null when that output is not bound. Nothing when neither is.
template <class Body>
void ElementwiseBackwardFrame(KernelContext& ctx, Place place, Body body) {
  const bool want_dx = ctx.HasOutput("X@GRAD");
  const bool want_dy = ctx.HasOutput("Y@GRAD");
  if (!want_dx && !want_dy) return;
  const Tensor& x_t = ctx.Input("X");
  const Tensor& y_t = ctx.Input("Y");
  const bool has_dout = ctx.InputReady("Out@GRAD");
  const BroadcastSplit s = SplitForBroadcast(x_t.shape(), y_t.shape(), ctx.Attr<int>("axis"));
  if (has_dout) {
    const Tensor& d = ctx.Input("Out@GRAD");
    RILL_CHECK(d.shape() == x_t.shape() && d.dtype() == x_t.dtype(), kInvalidArgument,
               "Out@GRAD is ", d.Describe(), " but X is ", x_t.Describe());
  }
  VisitFloatType(x_t.dtype(), [&]<class T>() {
    const T* x = x_t.data<T>();
    const T* y = y_t.data<T>();
    const T* dout = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const Shape x_shape = x_t.shape();
    const Shape y_shape = y_t.shape();
    auto allocate = [&](const char* slot, const Shape& shape) {
      Tensor* t = ctx.Output(slot);
      t->Allocate(DataTypeOf<T>(), shape, place);
      return t->mutable_data<T>();
    };
    T* dx = want_dx ? allocate("X@GRAD", x_shape) : nullptr;
    T* dy = want_dy ? allocate("Y@GRAD", y_shape) : nullptr;
    body(x, y, dout, dx, dy, s);
  });
}

// The gradient op: X@GRAD = dx(x, y, dout) elementwise and Y@GRAD = the sum
// of dy(x, y, dout) over the dims Y was broadcast along. A missing Out@GRAD
// means zero; a gradient output the op does not bind is not computed.
template <class DX, class DY>
void ElementwiseBackward(KernelContext& ctx, DX dx_fn, DY dy_fn) {
  ElementwiseBackwardFrame(
      ctx, Place::Cpu(),
      [&]<class T>(const T* x, const T* y, const T* dout, T* dx, T* dy, const BroadcastSplit& s) {
        if (dy) std::fill(dy, dy + s.n, T(0));
        if (!dout) {
          if (dx) std::fill(dx, dx + s.pre * s.n * s.post, T(0));
          return;
        }
        if (dx) {
          ForEachBroadcastElement(
              s, [&](int64_t e, int64_t j) { dx[e] = dx_fn(x[e], y[j], dout[e]); });
        }
        if (dy && s.post == 1) {
          ForEachBroadcastElement(
              s, [&](int64_t e, int64_t j) { dy[j] += dy_fn(x[e], y[j], dout[e]); });
        } else if (dy) {
          // In chunks of each row, as broadcast_sum.h says.
          for (int64_t i = 0; i < s.pre; ++i) {
            for (int64_t j = 0; j < s.n; ++j) {
              const int64_t base = (i * s.n + j) * s.post;
              for (int64_t first = 0; first < s.post; first += kBroadcastSumChunk) {
                const int64_t end = std::min(s.post, first + kBroadcastSumChunk);
                dy[j] += LaneSum<T>(end - first, [&](int64_t q) {
                  return dy_fn(x[base + first + q], y[j], dout[base + first + q]);
                });
              }
            }
          }
        }
      });
}

// Schemas of a binary elementwise op and of its gradient op "<type>_grad".
OpSchema ElementwiseSchema(const std::string& type, const std::string& formula, KernelFn kernel);
OpSchema ElementwiseGradSchema(const std::string& type, const std::string& formula,
                               KernelFn kernel);

}  // namespace rill
