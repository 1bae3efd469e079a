// tanh: Out = tanh(X). Its gradient op reads Out rather than X.
#include <cmath>
#include <vector>

#include "ops/math/unary.h"
#include "ops/nn/activation_grad.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void TanhKernel(KernelContext& ctx) {
  UnaryForward(ctx, []<class T>(T x) { return std::tanh(x); });
}

// X@GRAD = Out@GRAD * (1 - Out^2). A missing Out@GRAD means zero.
void TanhGradKernel(KernelContext& ctx) {
  ActivationBackward(ctx, []<class T>(T y, T dy) { return dy * (T(1) - y * y); });
}

void TanhGradShape(ShapeContext& ctx) {
  const Shape& out = ctx.InputShape("Out");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(out, ctx.InputShape("Out@GRAD")), "Out@GRAD shape ",
              ShapeToString(ctx.InputShape("Out@GRAD")), " differs from Out shape ",
              ShapeToString(out));
  }
  ctx.SetOutput("X@GRAD", out, ctx.InputType("Out"));
}

std::vector<proto::OpDesc> TanhGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("tanh_grad");
  const std::string out = OutputVar(fwd, "Out");
  SetInput(&grad, "Out", {out});
  SetInput(&grad, "Out@GRAD", {GradVarName(out)});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(tanh, OpSchema("tanh")
                           .Doc("Out = tanh(X), elementwise.")
                           .Input("X", "input tensor")
                           .Output("Out", "result, same shape and type as X")
                           .InferShape(SameShapeAs("X", "Out"))
                           .CpuKernel(TanhKernel)
                           .Grad(TanhGrad));

RILL_REGISTER_OP(tanh_grad, OpSchema("tanh_grad")
                                .Doc("X@GRAD = Out@GRAD * (1 - Out^2).")
                                .Input("Out", "the forward output")
                                .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                                .Output("X@GRAD", "gradient of X", kOptional)
                                .InferShape(TanhGradShape)
                                .CpuKernel(TanhGradKernel));

}  // namespace rill
