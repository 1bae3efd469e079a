// layer_norm: each row of X (the dims from begin_norm_axis on) normalised to
// zero mean and unit (biased) variance, times Scale plus Bias per element of
// the row, as Fluid's layer_norm; and its gradient. Mean and Variance (one
// per row) are kept for the gradient.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/math/lane_sum.h"
#include "ops/nn/layer_norm_util.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/parallel_for.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void LayerNormKernel(KernelContext& ctx) {
  const LayerNormRun r = CheckLayerNormKernel(ctx, false);
  const int64_t rows = r.dims.rows, cols = r.dims.cols;
  Tensor* y_t = ctx.Output("Y");
  Tensor* mean_t = ctx.Output("Mean");
  Tensor* var_t = ctx.Output("Variance");
  VisitFloatType(r.x->dtype(), [&]<class T>() {
    const T* x = r.x->data<T>();
    const T* scale = r.scale ? r.scale->data<T>() : nullptr;
    const T* bias = r.bias ? r.bias->data<T>() : nullptr;
    const Shape x_shape = r.x->shape();
    T* y = y_t->Allocate<T>(x_shape);
    T* mean = mean_t->Allocate<T>({rows});
    T* var = var_t->Allocate<T>({rows});
    const T eps = static_cast<T>(r.epsilon);
    const T count = static_cast<T>(cols);
    const int64_t min_rows = std::max<int64_t>(1, kMinValuesPerPart / std::max<int64_t>(1, cols));
    ParallelRanges(rows, min_rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T* xr = x + row * cols;
        T* yr = y + row * cols;
        const T m = LaneSum<T>(cols, [&](int64_t j) { return xr[j]; }) / count;
        const T v = LaneSum<T>(cols,
                               [&](int64_t j) {
                                 const T u = xr[j] - m;
                                 return u * u;
                               }) /
                    count;
        const T inv = T(1) / std::sqrt(v + eps);
        for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - m) * inv;
        if (scale != nullptr) {
          for (int64_t j = 0; j < cols; ++j) yr[j] *= scale[j];
        }
        if (bias != nullptr) {
          for (int64_t j = 0; j < cols; ++j) yr[j] += bias[j];
        }
        mean[row] = m;
        var[row] = v;
      }
    });
  });
}

// Per row, with xhat = (X - mean) * inv_std and g = Y@GRAD * Scale:
// X@GRAD = inv_std * (g - mean(g) - xhat * mean(g * xhat)). Over the rows:
// Scale@GRAD = sum(Y@GRAD * xhat), Bias@GRAD = sum(Y@GRAD). A missing Y@GRAD
// means zero.
void LayerNormGradKernel(KernelContext& ctx) {
  const LayerNormRun r = CheckLayerNormKernel(ctx, true);
  const int64_t rows = r.dims.rows, cols = r.dims.cols;
  Tensor* dx_t = ctx.HasOutput("X@GRAD") ? ctx.Output("X@GRAD") : nullptr;
  Tensor* dscale_t = ctx.HasOutput("Scale@GRAD") ? ctx.Output("Scale@GRAD") : nullptr;
  Tensor* dbias_t = ctx.HasOutput("Bias@GRAD") ? ctx.Output("Bias@GRAD") : nullptr;
  VisitFloatType(r.x->dtype(), [&]<class T>() {
    const T* x = r.x->data<T>();
    const T* dy = r.dy ? r.dy->data<T>() : nullptr;
    const T* scale = r.scale ? r.scale->data<T>() : nullptr;
    const T* mean = r.mean->data<T>();
    const T* var = r.variance->data<T>();
    const Shape x_shape = r.x->shape();
    const T eps = static_cast<T>(r.epsilon);
    // Scale@GRAD and Bias@GRAD accumulate here (outputs are allocated after
    // every input was read: X@GRAD may be Y@GRAD).
    std::vector<T> dscale(static_cast<size_t>(cols), T(0)), dbias(static_cast<size_t>(cols), T(0));
    std::vector<T> xhat(static_cast<size_t>(cols)), g(static_cast<size_t>(cols));
    T* dx = nullptr;
    if (dx_t != nullptr) {
      // Y@GRAD's row r is read whole before X@GRAD's row r is written.
      dx = dx_t->Allocate<T>(x_shape);
      if (dy == nullptr) {
        for (int64_t i = 0; i < rows * cols; ++i) dx[i] = T(0);
      }
    }
    const T count = static_cast<T>(cols);
    for (int64_t row = 0; row < rows && dy != nullptr; ++row) {
      const T* xr = x + row * cols;
      const T* dyr = dy + row * cols;
      const T m = mean[row];
      const T inv = T(1) / std::sqrt(var[row] + eps);
      for (int64_t j = 0; j < cols; ++j) xhat[j] = (xr[j] - m) * inv;
      for (int64_t j = 0; j < cols; ++j) {
        dscale[j] += dyr[j] * xhat[j];
        dbias[j] += dyr[j];
      }
      if (dx == nullptr) continue;
      for (int64_t j = 0; j < cols; ++j) g[j] = scale ? dyr[j] * scale[j] : dyr[j];
      const T g_mean = LaneSum<T>(cols, [&](int64_t j) { return g[j]; }) / count;
      const T gx_mean = LaneSum<T>(cols, [&](int64_t j) { return g[j] * xhat[j]; }) / count;
      T* dxr = dx + row * cols;
      for (int64_t j = 0; j < cols; ++j) dxr[j] = inv * (g[j] - g_mean - xhat[j] * gx_mean);
    }
    if (dscale_t != nullptr) {
      T* out = dscale_t->Allocate<T>({cols});
      for (int64_t j = 0; j < cols; ++j) out[j] = dscale[j];
    }
    if (dbias_t != nullptr) {
      T* out = dbias_t->Allocate<T>({cols});
      for (int64_t j = 0; j < cols; ++j) out[j] = dbias[j];
    }
  });
}

// Checks that `slot`, when bound, is declared [cols] of X's type.
void CheckRowSlot(ShapeContext& ctx, const char* op, const char* slot, int64_t n, DataType dtype,
                  const char* what) {
  if (!ctx.HasInput(slot)) return;
  const Shape& s = ctx.InputShape(slot);
  ctx.Check(s.size() == 1, op, ": ", slot, " (", ctx.InputName(slot), ") must have rank 1, is ",
            ShapeToString(s));
  ctx.CheckDim(s[0], n, StrCat(op, ": ", slot, " (", ctx.InputName(slot), ") against ", what));
  ctx.Check(ctx.InputType(slot) == dtype, op, ": ", slot, " (", ctx.InputName(slot), ") is ",
            DataTypeName(ctx.InputType(slot)), " but X is ", DataTypeName(dtype));
}

void InferLayerNormShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const LayerNormDims d =
      LayerNormDimsOf("layer_norm", ctx.InputName("X"), x, ctx.Attr<int64_t>("begin_norm_axis"));
  const DataType dtype = ctx.InputType("X");
  CheckRowSlot(ctx, "layer_norm", "Scale", d.cols, dtype, "X's normalised elements");
  CheckRowSlot(ctx, "layer_norm", "Bias", d.cols, dtype, "X's normalised elements");
  ctx.SetOutput("Y", x, dtype);
  ctx.SetOutput("Mean", {d.rows}, dtype);
  ctx.SetOutput("Variance", {d.rows}, dtype);
}

void InferLayerNormGradShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const LayerNormDims d = LayerNormDimsOf("layer_norm_grad", ctx.InputName("X"), x,
                                          ctx.Attr<int64_t>("begin_norm_axis"));
  const DataType dtype = ctx.InputType("X");
  CheckRowSlot(ctx, "layer_norm_grad", "Scale", d.cols, dtype, "X's normalised elements");
  CheckRowSlot(ctx, "layer_norm_grad", "Mean", d.rows, dtype, "X's rows");
  CheckRowSlot(ctx, "layer_norm_grad", "Variance", d.rows, dtype, "X's rows");
  if (ctx.HasInput("Y@GRAD")) {
    ctx.Check(ShapesCompatible(x, ctx.InputShape("Y@GRAD")), "layer_norm_grad: Y@GRAD (",
              ctx.InputName("Y@GRAD"), ") is ", ShapeToString(ctx.InputShape("Y@GRAD")),
              " but X is ", ShapeToString(x));
  }
  ctx.SetOutput("X@GRAD", x, dtype);
  ctx.SetOutput("Scale@GRAD", {d.cols}, dtype);
  ctx.SetOutput("Bias@GRAD", {d.cols}, dtype);
}

std::vector<proto::OpDesc> LayerNormGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("layer_norm_grad");
  SetInput(&grad, "X", {InputVar(fwd, "X")});
  const auto scale = InputVars(fwd, "Scale");
  if (!scale.empty()) SetInput(&grad, "Scale", scale);
  SetInput(&grad, "Mean", {OutputVar(fwd, "Mean")});
  SetInput(&grad, "Variance", {OutputVar(fwd, "Variance")});
  SetInput(&grad, "Y@GRAD", {GradVarName(OutputVar(fwd, "Y"))});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  if (!scale.empty()) SetOutput(&grad, "Scale@GRAD", {GradVarName(scale[0])});
  const auto bias = InputVars(fwd, "Bias");
  if (!bias.empty()) SetOutput(&grad, "Bias@GRAD", {GradVarName(bias[0])});
  for (const char* name : {"epsilon", "begin_norm_axis"}) {
    if (const proto::Attr* attr = FindAttr(fwd, name)) *MutableAttr(&grad, name) = *attr;
  }
  return {grad};
}

OpSchema WithLayerNormAttrs(OpSchema schema) {
  schema.Attr("epsilon", 1e-5f, "added to the variance before its square root", InRange(0.0, 1.0))
      .Attr("begin_norm_axis", 1, "the first dim of a row: rows are the dims before it",
            AtLeast(1));
  return schema;
}

}  // namespace

RILL_REGISTER_OP(
    layer_norm,
    WithLayerNormAttrs(OpSchema("layer_norm")
                           .Doc("Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias, the mean and "
                                "(biased) variance taken over each row: the dims from "
                                "begin_norm_axis on.")
                           .Input("X", "input, rank > begin_norm_axis")
                           .Input("Scale", "[cols], per element of a row; absent: 1", kOptional)
                           .Input("Bias", "[cols], per element of a row; absent: 0", kOptional)
                           .Output("Y", "the normalised X, X's shape")
                           .Output("Mean", "[rows], each row's mean", kNoGradient)
                           .Output("Variance", "[rows], each row's variance", kNoGradient))
        .InferShape(InferLayerNormShape)
        .CpuKernel(LayerNormKernel)
        .Grad(LayerNormGrad));

RILL_REGISTER_OP(
    layer_norm_grad,
    WithLayerNormAttrs(OpSchema("layer_norm_grad")
                           .Doc("Gradients of layer_norm with respect to X, Scale and Bias.")
                           .Input("X", "the forward X")
                           .Input("Scale", "the forward Scale; absent: 1", kOptional)
                           .Input("Mean", "the forward Mean", kNoGradient)
                           .Input("Variance", "the forward Variance", kNoGradient)
                           .Input("Y@GRAD", "gradient of Y; absent means zero", kOptional)
                           .Output("X@GRAD", "gradient of X", kOptional)
                           .Output("Scale@GRAD", "gradient of Scale", kOptional)
                           .Output("Bias@GRAD", "gradient of Bias", kOptional))
        .InferShape(InferLayerNormGradShape)
        .CpuKernel(LayerNormGradKernel));

}  // namespace rill
