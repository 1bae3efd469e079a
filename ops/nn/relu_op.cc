// relu: Out = max(X, 0). Its gradient op reads Out rather than X.
#include <vector>

#include "ops/math/unary.h"
#include "ops/nn/activation_grad.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void ReluKernel(KernelContext& ctx) {
  UnaryForward(ctx, []<class T>(T x) { return x > T(0) ? x : T(0); });
}

// X@GRAD = Out@GRAD where Out > 0, else 0. A missing Out@GRAD means zero.
void ReluGradKernel(KernelContext& ctx) {
  // dy is read unconditionally so the loop vectorizes as a select.
  ActivationBackward(ctx, []<class T>(T y, T dy) { return y > T(0) ? dy : T(0); });
}

void ReluGradShape(ShapeContext& ctx) {
  const Shape& out = ctx.InputShape("Out");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(out, ctx.InputShape("Out@GRAD")), "Out@GRAD shape ",
              ShapeToString(ctx.InputShape("Out@GRAD")), " differs from Out shape ",
              ShapeToString(out));
  }
  ctx.SetOutput("X@GRAD", out, ctx.InputType("Out"));
}

std::vector<proto::OpDesc> ReluGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("relu_grad");
  const std::string out = OutputVar(fwd, "Out");
  SetInput(&grad, "Out", {out});
  SetInput(&grad, "Out@GRAD", {GradVarName(out)});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(relu, OpSchema("relu")
                           .Doc("Out = max(X, 0), elementwise.")
                           .Input("X", "input tensor")
                           .Output("Out", "result, same shape and type as X")
                           .InferShape(SameShapeAs("X", "Out"))
                           .CpuKernel(ReluKernel)
                           .Grad(ReluGrad));

RILL_REGISTER_OP(relu_grad, OpSchema("relu_grad")
                                .Doc("X@GRAD = Out@GRAD where Out > 0, else 0.")
                                .Input("Out", "the forward output")
                                .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                                .Output("X@GRAD", "gradient of X", kOptional)
                                .InferShape(ReluGradShape)
                                .CpuKernel(ReluGradKernel));

}  // namespace rill
