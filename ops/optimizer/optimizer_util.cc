#include "ops/optimizer/optimizer_util.h"

namespace rill {

void CheckLikeParam(ShapeContext& ctx, const std::string& slot) {
  const Shape& param = ctx.InputShape("Param");
  const Shape& s = ctx.InputShape(slot);
  ctx.Check(ShapesCompatible(s, param), slot, " ", ShapeToString(s), " differs from Param ",
            ShapeToString(param));
  ctx.Check(ctx.InputType(slot) == ctx.InputType("Param"), slot, " is ",
            DataTypeName(ctx.InputType(slot)), " but Param is ",
            DataTypeName(ctx.InputType("Param")));
}

void CheckScalarSlot(ShapeContext& ctx, const std::string& slot) {
  const Shape& s = ctx.InputShape(slot);
  bool one = true;
  for (int64_t d : s) one = one && (d == 1 || d == -1);
  ctx.Check(one, slot, " must hold one element, has shape ", ShapeToString(s));
  const DataType t = ctx.InputType(slot);
  ctx.Check(t == DataType::kFloat32 || t == DataType::kFloat64, slot,
            " must be float32 or float64, is ", DataTypeName(t));
}

double ReadScalar(const Tensor& t, const char* slot) {
  CheckScalar(t, slot);
  return ScalarValue(t);
}

void CheckScalar(const Tensor& t, const char* slot) {
  RILL_CHECK(t.numel() == 1, kInvalidArgument, slot, " must hold one element, is ", t.Describe());
  RILL_CHECK(t.dtype() == DataType::kFloat32 || t.dtype() == DataType::kFloat64, kInvalidArgument,
             slot, " must be float32 or float64, is ", t.Describe());
}

double ScalarValue(const Tensor& t) {
  if (t.dtype() == DataType::kFloat32) return DecimalDouble(t.data<float>()[0]);
  return t.data<double>()[0];
}

void CheckDenseGrad(const Tensor& grad, const Tensor& param) {
  RILL_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(), kInvalidArgument,
             "Grad ", grad.Describe(), " does not match Param ", param.Describe());
}

SelectedRows SparseGrad(const KernelContext& ctx, const Tensor& param) {
  SelectedRows grad = ctx.InputRows("Grad").Merged();
  RILL_CHECK(
      param.rank() >= 1 && grad.height == param.dim(0) && grad.value.dtype() == param.dtype() &&
          grad.value.numel() == static_cast<int64_t>(grad.rows.size()) *
                                    (param.dim(0) == 0 ? 0 : param.numel() / param.dim(0)),
      kInvalidArgument, "sparse Grad (", grad.rows.size(), " rows of ", grad.value.Describe(),
      ", height ", grad.height, ") does not match Param ", param.Describe());
  return grad;
}

SgdDense ReadSgdDense(KernelContext& ctx, const Tensor& param) {
  const Tensor& grad = ctx.Input("Grad");
  CheckDenseGrad(grad, param);
  return {grad, ctx.Output("ParamOut")};
}

MomentumArgs ReadMomentumArgs(KernelContext& ctx, const Tensor& param, const Tensor& grad) {
  const Tensor& velocity = ctx.Input("Velocity");
  const Tensor& lr = ctx.Input("LearningRate");
  CheckScalar(lr, "LearningRate");
  const double mu = DecimalDouble(ctx.Attr<float>("mu"));
  const bool nesterov = ctx.Attr<bool>("use_nesterov");
  CheckDenseGrad(grad, param);
  RILL_CHECK(velocity.shape() == param.shape() && velocity.dtype() == param.dtype(),
             kInvalidArgument, "Velocity ", velocity.Describe(), " does not match Param ",
             param.Describe());
  Tensor* param_out = ctx.Output("ParamOut");
  Tensor* velocity_out = ctx.Output("VelocityOut");
  return {velocity, lr, mu, nesterov, param_out, velocity_out};
}

AdamArgs ReadAdamArgs(const KernelContext& ctx, bool decoupled_decay) {
  const Tensor& moment1 = ctx.Input("Moment1");
  const Tensor& moment2 = ctx.Input("Moment2");
  const Tensor& beta1_pow = ctx.Input("Beta1Pow");
  const Tensor& beta2_pow = ctx.Input("Beta2Pow");
  const Tensor& lr = ctx.Input("LearningRate");
  CheckScalar(lr, "LearningRate");
  CheckScalar(beta1_pow, "Beta1Pow");
  CheckScalar(beta2_pow, "Beta2Pow");
  const double beta1 = DecimalDouble(ctx.Attr<float>("beta1"));
  const double beta2 = DecimalDouble(ctx.Attr<float>("beta2"));
  const double epsilon = DecimalDouble(ctx.Attr<float>("epsilon"));
  const double weight_decay =
      decoupled_decay ? DecimalDouble(ctx.Attr<float>("weight_decay")) : 0.0;
  return {moment1, moment2, lr, beta1_pow, beta2_pow, beta1, beta2, epsilon, weight_decay};
}

AdamOutputs CheckAdamOperands(KernelContext& ctx, const AdamArgs& args, const Tensor& param,
                              const Tensor* dense_grad) {
  if (dense_grad != nullptr) CheckDenseGrad(*dense_grad, param);
  for (const Tensor* t : {&args.moment1, &args.moment2}) {
    RILL_CHECK(t->shape() == param.shape() && t->dtype() == param.dtype(), kInvalidArgument,
               "Moment1 and Moment2 must match Param ", param.Describe(), "; one is ",
               t->Describe());
  }
  Tensor* param_out = ctx.Output("ParamOut");
  Tensor* moment1_out = ctx.Output("Moment1Out");
  Tensor* moment2_out = ctx.Output("Moment2Out");
  return {param_out, moment1_out, moment2_out};
}

WarmupCosineAttrs ReadWarmupCosineAttrs(const KernelContext& ctx) {
  return {ctx.Attr<int>("warmup_steps"), ctx.Attr<int>("decay_steps"),
          DecimalDouble(ctx.Attr<float>("min_ratio"))};
}

}  // namespace rill
