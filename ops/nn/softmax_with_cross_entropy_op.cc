// softmax_with_cross_entropy: Softmax = softmax(Logits) over the last axis and
// Loss = cross entropy of Softmax against Label, computed from log-sum-exp so
// the loss stays finite however confident the logits are.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/nn/softmax_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SoftmaxWithCrossEntropyKernel(KernelContext& ctx) {
  const LabeledInputs args = ReadSoftmaxCrossEntropyInputs(ctx, "Logits");
  const bool soft = args.soft;
  const int64_t rows = args.rows;
  const int64_t cols = args.cols;
  Tensor* softmax = ctx.Output("Softmax");
  Tensor* loss = ctx.Output("Loss");
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* in = args.x.data<T>();
    const T* soft_label = soft ? args.label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : args.label.data<int64_t>();
    Shape loss_shape = args.x.shape();
    loss_shape.back() = 1;
    T* sm = softmax->Allocate<T>(args.x.shape());
    T* lo = loss->Allocate<T>(loss_shape);
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = in + r * cols;
      T* sr = sm + r * cols;
      // What the loss needs from the logits is read before Softmax is written,
      // so the op stays correct if Softmax and Logits share a variable.
      T label_sum = 1;
      T label_dot = 0;  // sum(label * logits)
      if (soft) {
        const T* lr = soft_label + r * cols;
        label_sum = 0;
        for (int64_t j = 0; j < cols; ++j) {
          label_sum += lr[j];
          label_dot += lr[j] * xr[j];
        }
      } else {
        const int64_t l = hard_label[r];
        CheckHardLabel(r, l, cols);
        label_dot = xr[l];
      }
      if (cols == 0) {  // only reachable with soft labels: nothing to predict, no loss
        lo[r] = 0;
        continue;
      }
      const SoftmaxRowSums<T> row = SoftmaxOfRow(xr, sr, cols);  // as softmax's rows
      // -sum_j label_j * log(softmax_j) = sum(label) * logsumexp - sum(label * logits).
      const T log_sum_exp = row.max + std::log(row.sum);
      lo[r] = label_sum * log_sum_exp - label_dot;
    }
  });
}

void SoftmaxWithCrossEntropyShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("Logits");
  const Shape& label = ctx.InputShape("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  ctx.Check(!x.empty(), "Logits must have rank >= 1 (classes on the last axis), got a scalar");
  ctx.Check(label.size() == x.size(), "Label has shape ", ShapeToString(label),
            " but Logits has shape ", ShapeToString(x), ": ranks differ");
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    ctx.CheckDim(x[i], label[i], StrCat("dim ", i, " of Logits and Label"));
  }
  if (soft) {
    ctx.Check(ctx.InputType("Label") == ctx.InputType("Logits"),
              "soft Label must have Logits' type ", DataTypeName(ctx.InputType("Logits")), ", is ",
              DataTypeName(ctx.InputType("Label")));
    ctx.CheckDim(label.back(), x.back(), "last dim of soft Label and Logits");
  } else {
    ctx.Check(ctx.InputType("Label") == DataType::kInt64, "Label must be int64 class indices, is ",
              DataTypeName(ctx.InputType("Label")));
    ctx.CheckDim(label.back(), 1, "last dim of Label (one class index per row)");
  }
  Shape loss = x;
  loss.back() = 1;
  ctx.SetOutput("Softmax", x, ctx.InputType("Logits"));
  ctx.SetOutput("Loss", loss, ctx.InputType("Logits"));
}

// Logits@GRAD = (Softmax * sum(Label) - Label) * Loss@GRAD, Label being the
// one-hot row for hard labels (so sum(Label) = 1). A missing Loss@GRAD means zero.
void SoftmaxWithCrossEntropyGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("Logits@GRAD")) return;
  const LabeledInputs args = ReadSoftmaxCrossEntropyInputs(ctx, "Softmax");
  const bool soft = args.soft;
  const int64_t rows = args.rows;
  const int64_t cols = args.cols;
  const bool has_dloss = ctx.InputReady("Loss@GRAD");
  Tensor* dx = ctx.Output("Logits@GRAD");
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* sm = args.x.data<T>();
    const int64_t n = args.x.numel();
    const T* dloss = has_dloss ? RowLossGrad<T>(ctx, "Loss@GRAD", rows) : nullptr;
    const T* soft_label = soft ? args.label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : args.label.data<int64_t>();
    T* g = dx->Allocate<T>(args.x.shape());
    if (dloss == nullptr) {
      for (int64_t i = 0; i < n; ++i) g[i] = T(0);
      return;
    }
    for (int64_t r = 0; r < rows; ++r) {
      const T* sr = sm + r * cols;
      T* gr = g + r * cols;
      const T d = dloss[r];
      if (soft) {
        const T* lr = soft_label + r * cols;
        T label_sum = 0;
        for (int64_t j = 0; j < cols; ++j) label_sum += lr[j];
        const T ds = d * label_sum;
        for (int64_t j = 0; j < cols; ++j) gr[j] = ds * sr[j] - d * lr[j];
      } else {
        const int64_t l = hard_label[r];
        CheckHardLabel(r, l, cols);
        for (int64_t j = 0; j < cols; ++j) gr[j] = d * sr[j];
        gr[l] -= d;
      }
    }
  });
}

void SoftmaxWithCrossEntropyGradShape(ShapeContext& ctx) {
  const Shape& softmax = ctx.InputShape("Softmax");
  if (ctx.HasInput("Loss@GRAD")) {
    Shape loss = softmax;
    if (!loss.empty()) loss.back() = 1;
    ctx.Check(ShapesCompatible(loss, ctx.InputShape("Loss@GRAD")), "Loss@GRAD has shape ",
              ShapeToString(ctx.InputShape("Loss@GRAD")), ", want ", ShapeToString(loss));
  }
  ctx.SetOutput("Logits@GRAD", softmax, ctx.InputType("Softmax"));
}

// The gradient needs Softmax and Label only, not the logits.
std::vector<proto::OpDesc> SoftmaxWithCrossEntropyGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("softmax_with_cross_entropy_grad");
  SetInput(&grad, "Softmax", {OutputVar(fwd, "Softmax")});
  SetInput(&grad, "Label", {InputVar(fwd, "Label")});
  SetInput(&grad, "Loss@GRAD", {GradVarName(OutputVar(fwd, "Loss"))});
  SetOutput(&grad, "Logits@GRAD", {GradVarName(InputVar(fwd, "Logits"))});
  *grad.mutable_attrs() = fwd.attrs();
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(softmax_with_cross_entropy,
                 OpSchema("softmax_with_cross_entropy")
                     .Doc("Softmax = softmax(Logits); Loss = -sum(Label * log(Softmax)) per row.")
                     .Input("Logits", "unscaled scores [N, C] (any rank; classes on the last axis)")
                     .Input("Label", "int64 class indices [N, 1], or float [N, C] with soft_label",
                            kNoGradient)
                     .Output("Softmax", "softmax of Logits, same shape", kNoGradient)
                     .Output("Loss", "loss per row [N, 1]")
                     .Attr("soft_label", false, "Label holds a distribution over the classes")
                     .InferShape(SoftmaxWithCrossEntropyShape)
                     .CpuKernel(SoftmaxWithCrossEntropyKernel)
                     .Grad(SoftmaxWithCrossEntropyGrad));

RILL_REGISTER_OP(softmax_with_cross_entropy_grad,
                 OpSchema("softmax_with_cross_entropy_grad")
                     .Doc("Logits@GRAD = (Softmax * sum(Label) - Label) * Loss@GRAD.")
                     .Input("Softmax", "the forward Softmax output")
                     .Input("Label", "the forward labels", kNoGradient)
                     .Input("Loss@GRAD", "gradient of Loss; absent means zero", kOptional)
                     .Output("Logits@GRAD", "gradient of Logits", kOptional)
                     .Attr("soft_label", false, "Label holds a distribution over the classes")
                     .InferShape(SoftmaxWithCrossEntropyGradShape)
                     .CpuKernel(SoftmaxWithCrossEntropyGradKernel));

}  // namespace rill
