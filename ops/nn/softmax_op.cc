// softmax: Out = exp(X) / sum(exp(X)) over the last axis, computed from
// X - max(X) per row so large inputs do not overflow.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/nn/softmax_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SoftmaxKernel(KernelContext& ctx) {
  const Tensor& x = SoftmaxInput(ctx);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t cols = x.dim(x.rank() - 1);
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    T* o = out->Allocate<T>(x.shape());
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = in + r * cols;
      T* yr = o + r * cols;
      T max = xr[0];
      for (int64_t j = 1; j < cols; ++j) max = std::max(max, xr[j]);
      T sum = 0;
      for (int64_t j = 0; j < cols; ++j) {
        yr[j] = std::exp(xr[j] - max);
        sum += yr[j];
      }
      const T inv = T(1) / sum;
      for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
    }
  });
}

void SoftmaxShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  ctx.Check(!x.empty(), "softmax needs X of rank >= 1, got a scalar");
  ctx.SetOutput("Out", x, ctx.InputType("X"));
}

// Per row: X@GRAD = (Out@GRAD - sum(Out@GRAD * Out)) * Out. A missing
// Out@GRAD means zero.
void SoftmaxGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = SoftmaxGradInput(ctx);
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(y.dtype(), [&]<class T>() {
    const T* out = y.data<T>();
    const int64_t n = y.numel();
    if (!has_dy) {
      T* g = dx->Allocate<T>(y.shape());
      for (int64_t i = 0; i < n; ++i) g[i] = T(0);
      return;
    }
    const T* dy = SoftmaxOutGrad<T>(ctx, y);
    const int64_t cols = y.dim(y.rank() - 1);
    const int64_t rows = cols == 0 ? 0 : n / cols;
    T* g = dx->Allocate<T>(y.shape());
    for (int64_t r = 0; r < rows; ++r) {
      const T* yr = out + r * cols;
      const T* dyr = dy + r * cols;
      T* gr = g + r * cols;
      T dot = 0;
      for (int64_t j = 0; j < cols; ++j) dot += dyr[j] * yr[j];
      for (int64_t j = 0; j < cols; ++j) gr[j] = (dyr[j] - dot) * yr[j];
    }
  });
}

void SoftmaxGradShape(ShapeContext& ctx) {
  const Shape& out = ctx.InputShape("Out");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(out, ctx.InputShape("Out@GRAD")), "Out@GRAD shape ",
              ShapeToString(ctx.InputShape("Out@GRAD")), " differs from Out shape ",
              ShapeToString(out));
  }
  ctx.SetOutput("X@GRAD", out, ctx.InputType("Out"));
}

// The gradient needs only Out, so X need not be kept for the backward pass.
std::vector<proto::OpDesc> SoftmaxGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("softmax_grad");
  const std::string out = OutputVar(fwd, "Out");
  SetInput(&grad, "Out", {out});
  SetInput(&grad, "Out@GRAD", {GradVarName(out)});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(softmax, OpSchema("softmax")
                              .Doc("Out = exp(X) / sum(exp(X)) over the last axis.")
                              .Input("X", "input tensor, rank >= 1")
                              .Output("Out", "probabilities, same shape and type as X")
                              .InferShape(SoftmaxShape)
                              .CpuKernel(SoftmaxKernel)
                              .Grad(SoftmaxGrad));

RILL_REGISTER_OP(softmax_grad,
                 OpSchema("softmax_grad")
                     .Doc("X@GRAD = (Out@GRAD - sum(Out@GRAD * Out, last axis)) * Out.")
                     .Input("Out", "the forward output")
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .InferShape(SoftmaxGradShape)
                     .CpuKernel(SoftmaxGradKernel));

}  // namespace rill
