// cross_entropy: Y = -log(X[label]) per row of probabilities X, or with
// soft_label Y = -sum(Label * log(X)) over the last axis.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/nn/softmax_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

// log(0) would give an infinite loss and gradient: probabilities are clamped
// to at least 1e-20 (finite in float32 too) before the log and the division.
template <class T>
constexpr T kMinProbability = T(1e-20);

void CrossEntropyKernel(KernelContext& ctx) {
  const LabeledInputs args = ReadCrossEntropyInputs(ctx);
  const bool soft = args.soft;
  const int64_t rows = args.rows;
  const int64_t cols = args.cols;
  Tensor* y = ctx.Output("Y");
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* in = args.x.data<T>();
    Shape y_shape = args.x.shape();
    y_shape.back() = 1;
    constexpr T eps = kMinProbability<T>;
    if (soft) {
      const T* lab = args.label.data<T>();
      T* out = y->Allocate<T>(y_shape);
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = in + r * cols;
        const T* lr = lab + r * cols;
        T sum = 0;
        for (int64_t j = 0; j < cols; ++j) sum += lr[j] * std::log(std::max(xr[j], eps));
        out[r] = -sum;
      }
      return;
    }
    const int64_t* lab = args.label.data<int64_t>();
    T* out = y->Allocate<T>(y_shape);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t l = lab[r];
      CheckHardLabel(r, l, cols);
      out[r] = -std::log(std::max(in[r * cols + l], eps));
    }
  });
}

void CrossEntropyShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& label = ctx.InputShape("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  ctx.Check(!x.empty(), "X must have rank >= 1 (probabilities over the last axis), got a scalar");
  ctx.Check(label.size() == x.size(), "Label has shape ", ShapeToString(label), " but X has shape ",
            ShapeToString(x), ": ranks differ");
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    ctx.CheckDim(x[i], label[i], StrCat("dim ", i, " of X and Label"));
  }
  if (soft) {
    ctx.Check(ctx.InputType("Label") == ctx.InputType("X"), "soft Label must have X's type ",
              DataTypeName(ctx.InputType("X")), ", is ", DataTypeName(ctx.InputType("Label")));
    ctx.CheckDim(label.back(), x.back(), "last dim of soft Label and X");
  } else {
    ctx.Check(ctx.InputType("Label") == DataType::kInt64, "Label must be int64 class indices, is ",
              DataTypeName(ctx.InputType("Label")));
    ctx.CheckDim(label.back(), 1, "last dim of Label (one class index per row)");
  }
  Shape y = x;
  y.back() = 1;
  ctx.SetOutput("Y", y, ctx.InputType("X"));
}

// X@GRAD = -Y@GRAD * Label / X (soft), or -Y@GRAD / X at the label and 0
// elsewhere (hard), with X clamped as in the forward op. A missing Y@GRAD
// means zero.
void CrossEntropyGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const LabeledInputs args = ReadCrossEntropyInputs(ctx);
  const bool soft = args.soft;
  const int64_t rows = args.rows;
  const int64_t cols = args.cols;
  const bool has_dy = ctx.InputReady("Y@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* in = args.x.data<T>();
    const int64_t n = args.x.numel();
    constexpr T eps = kMinProbability<T>;
    const T* dy = has_dy ? RowLossGrad<T>(ctx, "Y@GRAD", rows) : nullptr;
    if (soft) {
      const T* lab = args.label.data<T>();
      T* g = dx->Allocate<T>(args.x.shape());
      if (dy == nullptr) {
        for (int64_t i = 0; i < n; ++i) g[i] = T(0);
        return;
      }
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = in + r * cols;
        const T* lr = lab + r * cols;
        T* gr = g + r * cols;
        const T d = -dy[r];
        for (int64_t j = 0; j < cols; ++j) gr[j] = d * lr[j] / std::max(xr[j], eps);
      }
      return;
    }
    const int64_t* lab = args.label.data<int64_t>();
    T* g = dx->Allocate<T>(args.x.shape());
    for (int64_t i = 0; i < n; ++i) g[i] = T(0);
    if (dy == nullptr) return;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t l = lab[r];
      CheckHardLabel(r, l, cols);
      g[r * cols + l] = -dy[r] / std::max(in[r * cols + l], eps);
    }
  });
}

void CrossEntropyGradShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  if (ctx.HasInput("Y@GRAD")) {
    Shape y = x;
    if (!y.empty()) y.back() = 1;
    ctx.Check(ShapesCompatible(y, ctx.InputShape("Y@GRAD")), "Y@GRAD has shape ",
              ShapeToString(ctx.InputShape("Y@GRAD")), ", want ", ShapeToString(y));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputType("X"));
}

std::vector<proto::OpDesc> CrossEntropyGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("cross_entropy_grad");
  const std::string x = InputVar(fwd, "X");
  SetInput(&grad, "X", {x});
  SetInput(&grad, "Label", {InputVar(fwd, "Label")});
  SetInput(&grad, "Y@GRAD", {GradVarName(OutputVar(fwd, "Y"))});
  SetOutput(&grad, "X@GRAD", {GradVarName(x)});
  *grad.mutable_attrs() = fwd.attrs();
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(cross_entropy,
                 OpSchema("cross_entropy")
                     .Doc("Y = -log(X[Label]) per row, or -sum(Label * log(X)) with soft_label.")
                     .Input("X", "probabilities [N, C] (any rank; classes on the last axis)")
                     .Input("Label", "int64 class indices [N, 1], or float [N, C] with soft_label",
                            kNoGradient)
                     .Output("Y", "loss per row [N, 1]")
                     .Attr("soft_label", false, "Label holds a distribution over the classes")
                     .InferShape(CrossEntropyShape)
                     .CpuKernel(CrossEntropyKernel)
                     .Grad(CrossEntropyGrad));

RILL_REGISTER_OP(cross_entropy_grad,
                 OpSchema("cross_entropy_grad")
                     .Doc("Gradient of cross_entropy with respect to X.")
                     .Input("X", "the forward probabilities")
                     .Input("Label", "the forward labels", kNoGradient)
                     .Input("Y@GRAD", "gradient of Y; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Attr("soft_label", false, "Label holds a distribution over the classes")
                     .InferShape(CrossEntropyGradShape)
                     .CpuKernel(CrossEntropyGradKernel));

}  // namespace rill
