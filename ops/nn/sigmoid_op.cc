// sigmoid: Out = 1 / (1 + exp(-X)). Its gradient op reads Out rather than X.
#include <cmath>
#include <vector>

#include "ops/math/unary.h"
#include "ops/nn/activation_grad.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SigmoidKernel(KernelContext& ctx) {
  UnaryForward(ctx, []<class T>(T x) { return T(1) / (T(1) + std::exp(-x)); });
}

// X@GRAD = Out@GRAD * Out * (1 - Out). A missing Out@GRAD means zero.
void SigmoidGradKernel(KernelContext& ctx) {
  ActivationBackward(ctx, []<class T>(T y, T dy) { return dy * y * (T(1) - y); });
}

void SigmoidGradShape(ShapeContext& ctx) {
  const Shape& out = ctx.InputShape("Out");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(out, ctx.InputShape("Out@GRAD")), "Out@GRAD shape ",
              ShapeToString(ctx.InputShape("Out@GRAD")), " differs from Out shape ",
              ShapeToString(out));
  }
  ctx.SetOutput("X@GRAD", out, ctx.InputType("Out"));
}

std::vector<proto::OpDesc> SigmoidGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("sigmoid_grad");
  const std::string out = OutputVar(fwd, "Out");
  SetInput(&grad, "Out", {out});
  SetInput(&grad, "Out@GRAD", {GradVarName(out)});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(sigmoid, OpSchema("sigmoid")
                              .Doc("Out = 1 / (1 + exp(-X)), elementwise.")
                              .Input("X", "input tensor")
                              .Output("Out", "result, same shape and type as X")
                              .InferShape(SameShapeAs("X", "Out"))
                              .CpuKernel(SigmoidKernel)
                              .Grad(SigmoidGrad));

RILL_REGISTER_OP(sigmoid_grad,
                 OpSchema("sigmoid_grad")
                     .Doc("X@GRAD = Out@GRAD * Out * (1 - Out).")
                     .Input("Out", "the forward output")
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .InferShape(SigmoidGradShape)
                     .CpuKernel(SigmoidGradKernel));

}  // namespace rill
