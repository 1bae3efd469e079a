// gelu: Out = X * Phi(X) = 0.5 * X * (1 + erf(X / sqrt(2))), the exact form
// (Fluid's default, approximate=false). Its gradient op reads X.
#include <cmath>
#include <vector>

#include "ops/math/unary.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 * pi)

void GeluKernel(KernelContext& ctx) {
  UnaryForward(ctx, []<class T>(T x) {
    return T(0.5) * x * (T(1) + std::erf(x * static_cast<T>(kInvSqrt2)));
  });
}

// X@GRAD = Out@GRAD * (Phi(X) + X * phi(X)), phi the standard normal density.
void GeluGradKernel(KernelContext& ctx) {
  UnaryBackward(ctx, "X", []<class T>(T x, T dy) {
    const T cdf = T(0.5) * (T(1) + std::erf(x * static_cast<T>(kInvSqrt2)));
    const T pdf = static_cast<T>(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
    return dy * (cdf + x * pdf);
  });
}

void GeluGradShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(x, ctx.InputShape("Out@GRAD")), "gelu_grad: Out@GRAD (",
              ctx.InputName("Out@GRAD"), ") is ", ShapeToString(ctx.InputShape("Out@GRAD")),
              " but X (", ctx.InputName("X"), ") is ", ShapeToString(x));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputType("X"));
}

// The gradient needs X only: Out need not be kept for the backward pass.
std::vector<proto::OpDesc> GeluGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("gelu_grad");
  const std::string x = InputVar(fwd, "X");
  SetInput(&grad, "X", {x});
  SetInput(&grad, "Out@GRAD", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "X@GRAD", {GradVarName(x)});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(gelu, OpSchema("gelu")
                           .Doc("Out = 0.5 * X * (1 + erf(X / sqrt(2))), elementwise.")
                           .Input("X", "input tensor")
                           .Output("Out", "result, same shape and type as X")
                           .InferShape(SameShapeAs("X", "Out"))
                           .CpuKernel(GeluKernel)
                           .Grad(GeluGrad));

RILL_REGISTER_OP(gelu_grad, OpSchema("gelu_grad")
                                .Doc("X@GRAD = Out@GRAD * (Phi(X) + X * phi(X)).")
                                .Input("X", "the forward input")
                                .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                                .Output("X@GRAD", "gradient of X", kOptional)
                                .InferShape(GeluGradShape)
                                .CpuKernel(GeluGradKernel));

}  // namespace rill
