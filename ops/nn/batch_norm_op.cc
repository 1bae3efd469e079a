// batch_norm: Fluid's batch normalisation over the channels of [N, C] or NCHW
// [N, C, H, W] inputs, and its gradient.
//
// Training (is_test false): each channel is normalised with the batch's mean
// and biased variance, and the running statistics move towards them:
// MeanOut = momentum * Mean + (1 - momentum) * batch mean (VarianceOut
// likewise). MeanOut and VarianceOut are normally the variables Mean and
// Variance themselves (persistable, not trained), updated in place.
// Inference (is_test true): the running Mean and Variance normalise, and
// MeanOut/VarianceOut keep their values.
// SavedMean and SavedVariance hold what normalised (SavedVariance as the
// inverse standard deviation 1 / sqrt(var + epsilon), as in Fluid's CPU
// kernel) for the gradient.
//
// Data parallel: each place normalises its own slice of the batch with its
// slice's statistics and updates its own copy of the running statistics
// (as Fluid and PyTorch DDP do by default); see runtime/graph/data_parallel.h.
// sync_batch_norm (sync_batch_norm_op.cc) takes the statistics of the whole
// batch across the places instead.
#include <cmath>
#include <vector>

#include "ops/nn/batch_norm_channels.h"
#include "ops/nn/batch_norm_util.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void BatchNormKernel(KernelContext& ctx) {
  const BatchNormForward f = CheckBatchNormKernel(ctx);
  const BatchNormDims& d = f.dims;
  VisitFloatType(f.x->dtype(), [&]<class T>() {
    const T* x = f.x->data<T>();
    const size_t c = static_cast<size_t>(d.c);
    std::vector<T> running_mean(f.mean->data<T>(), f.mean->data<T>() + c);
    std::vector<T> running_var(f.variance->data<T>(), f.variance->data<T>() + c);
    std::vector<T> mean = running_mean, var = running_var;
    if (!f.is_test) {
      const T count = static_cast<T>(d.per_channel());
      ForEachChannel(d, [&](int64_t ch) {
        const size_t at = static_cast<size_t>(ch);
        mean[at] = ChannelSum<T>(d, ch, [&](int64_t i) { return x[i]; }) / count;
        const T m = mean[at];
        var[at] = ChannelSum<T>(d, ch,
                                [&](int64_t i) {
                                  const T u = x[i] - m;
                                  return u * u;
                                }) /
                  count;
      });
    }
    WriteBatchNormOutputs<T>(ctx, f, running_mean, running_var, mean, var);
  });
}

// With xhat = (X - mean) * inv_std: Bias@GRAD = sum(dY), Scale@GRAD =
// sum(dY * xhat) per channel; in training X@GRAD = Scale * inv_std * (dY -
// Bias@GRAD / m - xhat * Scale@GRAD / m) (the batch statistics depend on X),
// in inference X@GRAD = Scale * inv_std * dY. A missing Y@GRAD means zero.
void BatchNormGradKernel(KernelContext& ctx) {
  const BatchNormBackward b = CheckBatchNormGradKernel(ctx);
  VisitFloatType(b.x->dtype(), [&]<class T>() {
    std::vector<T> sum_dy, sum_dy_xmu;
    BatchNormGradSums<T>(b, &sum_dy, &sum_dy_xmu);
    WriteBatchNormParamGrads<T>(ctx, b, sum_dy, sum_dy_xmu);
    if (!ctx.HasOutput("X@GRAD")) return;
    WriteBatchNormInputGrad<T>(b, sum_dy, sum_dy_xmu, static_cast<T>(b.dims.per_channel()),
                               ctx.Output("X@GRAD"));
  });
}

// Checks that `slot` is declared [C] of X's type.
void CheckChannelSlot(ShapeContext& ctx, const char* op, const char* slot, int64_t c,
                      DataType dtype) {
  const Shape& s = ctx.InputShape(slot);
  ctx.Check(s.size() == 1, op, ": ", slot, " (", ctx.InputName(slot), ") must be [C], is ",
            ShapeToString(s));
  ctx.CheckDim(s[0], c,
               StrCat(op, ": ", slot, " (", ctx.InputName(slot), ") against X's channels"));
  ctx.Check(ctx.InputType(slot) == dtype, op, ": ", slot, " (", ctx.InputName(slot), ") is ",
            DataTypeName(ctx.InputType(slot)), " but X is ", DataTypeName(dtype));
}

void InferBatchNormShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const BatchNormDims d = BatchNormDimsOf("batch_norm", ctx.InputName("X"), x);
  const DataType dtype = ctx.InputType("X");
  for (const char* slot : {"Scale", "Bias", "Mean", "Variance"}) {
    CheckChannelSlot(ctx, "batch_norm", slot, d.c, dtype);
  }
  const Shape channels{d.c >= 0 ? d.c : ctx.InputShape("Scale")[0]};
  ctx.SetOutput("Y", x, dtype);
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}) {
    ctx.SetOutput(slot, channels, dtype);
  }
}

void InferBatchNormGradShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const BatchNormDims d = BatchNormDimsOf("batch_norm_grad", ctx.InputName("X"), x);
  const DataType dtype = ctx.InputType("X");
  for (const char* slot : {"Scale", "SavedMean", "SavedVariance"}) {
    CheckChannelSlot(ctx, "batch_norm_grad", slot, d.c, dtype);
  }
  if (ctx.HasInput("Y@GRAD")) {
    ctx.Check(ShapesCompatible(x, ctx.InputShape("Y@GRAD")), "batch_norm_grad: Y@GRAD (",
              ctx.InputName("Y@GRAD"), ") is ", ShapeToString(ctx.InputShape("Y@GRAD")),
              " but X is ", ShapeToString(x));
  }
  ctx.SetOutput("X@GRAD", x, dtype);
  ctx.SetOutput("Scale@GRAD", ctx.InputShape("Scale"), dtype);
  ctx.SetOutput("Bias@GRAD", ctx.InputShape("Scale"), dtype);
}

std::vector<proto::OpDesc> BatchNormGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("batch_norm_grad");
  SetInput(&grad, "X", {InputVar(fwd, "X")});
  SetInput(&grad, "Scale", {InputVar(fwd, "Scale")});
  SetInput(&grad, "SavedMean", {OutputVar(fwd, "SavedMean")});
  SetInput(&grad, "SavedVariance", {OutputVar(fwd, "SavedVariance")});
  SetInput(&grad, "Y@GRAD", {GradVarName(OutputVar(fwd, "Y"))});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  SetOutput(&grad, "Scale@GRAD", {GradVarName(InputVar(fwd, "Scale"))});
  SetOutput(&grad, "Bias@GRAD", {GradVarName(InputVar(fwd, "Bias"))});
  for (const char* name : {"is_test", "data_layout"}) {
    if (const proto::Attr* attr = FindAttr(fwd, name)) *MutableAttr(&grad, name) = *attr;
  }
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(
    batch_norm,
    OpSchema("batch_norm")
        .Doc("Batch normalisation over the channels (dim 1) of [N, C] or NCHW X: Y = (X - mean) "
             "/ sqrt(var + epsilon) * Scale + Bias, with the batch's statistics in training "
             "(the running ones move towards them) or the running ones in inference.")
        .Input("X", "[N, C] or [N, C, H, W]")
        .Input("Scale", "[C], the multiplier (gamma)")
        .Input("Bias", "[C], the offset (beta)")
        .Input("Mean", "[C], the running mean (persistable, not trained)", kNoGradient)
        .Input("Variance", "[C], the running variance (persistable, not trained)", kNoGradient)
        .Output("Y", "the normalised X, X's shape")
        .Output("MeanOut", "the running mean after this step: the variable Mean, updated in place",
                kNoGradient)
        .Output("VarianceOut", "the running variance after this step: the variable Variance",
                kNoGradient)
        .Output("SavedMean", "[C], the mean that normalised (the batch's in training)", kNoGradient)
        .Output("SavedVariance",
                "[C], 1 / sqrt(variance + epsilon) of the variance that normalised", kNoGradient)
        .Attr("momentum", 0.9f, "weight of the old running statistics in their update",
              InRange(0.0, 1.0))
        .Attr("epsilon", 1e-5f, "added to the variance before its square root", InRange(0.0, 1.0))
        .Attr("is_test", false, "inference: normalise with the running statistics, keep them")
        .Attr("data_layout", "NCHW", "the layout of X (channels at dim 1)", OneOf({"NCHW"}))
        .InferShape(InferBatchNormShape)
        .CpuKernel(BatchNormKernel)
        .Grad(BatchNormGrad));

RILL_REGISTER_OP(batch_norm_grad,
                 OpSchema("batch_norm_grad")
                     .Doc("Gradients of batch_norm with respect to X, Scale and Bias.")
                     .Input("X", "the forward X")
                     .Input("Scale", "the forward Scale")
                     .Input("SavedMean", "the forward SavedMean", kNoGradient)
                     .Input("SavedVariance",
                            "the forward SavedVariance (inverse standard deviation)", kNoGradient)
                     .Input("Y@GRAD", "gradient of Y; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Output("Scale@GRAD", "gradient of Scale", kOptional)
                     .Output("Bias@GRAD", "gradient of Bias", kOptional)
                     .Attr("is_test", false,
                           "the forward op normalised with the running statistics")
                     .Attr("data_layout", "NCHW", "the layout of X (channels at dim 1)",
                           OneOf({"NCHW"}))
                     .InferShape(InferBatchNormGradShape)
                     .CpuKernel(BatchNormGradKernel));

}  // namespace rill
