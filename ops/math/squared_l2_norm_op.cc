// squared_l2_norm: Out [1] = the sum of X's squared elements (gradient
// clipping by global norm sums these over every gradient).
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void SquaredL2NormKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    T sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += in[i] * in[i];
    out->Allocate<T>({1})[0] = sum;
  });
}

void SquaredL2NormShape(ShapeContext& ctx) { ctx.SetOutput("Out", {1}, ctx.InputType("X")); }

// X@GRAD = 2 X Out@GRAD[0].
void SquaredL2NormGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const bool has_dout = ctx.InputReady("Out@GRAD");
  Tensor* dx_t = ctx.Output("X@GRAD");
  VisitFloatType(x.dtype(), [&]<class T>() {
    T g = 0;
    if (has_dout) {
      const Tensor& dout = ctx.Input("Out@GRAD");
      RILL_CHECK(dout.numel() == 1, kInvalidArgument, "Out@GRAD must hold one element, is ",
                 dout.Describe());
      g = 2 * dout.data<T>()[0];
    }
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    T* dx = dx_t->Allocate<T>(shape);
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) dx[i] = g * in[i];
  });
}

void SquaredL2NormGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

}  // namespace

RILL_REGISTER_OP(squared_l2_norm, OpSchema("squared_l2_norm")
                                      .Doc("Out [1] = sum of X's elements squared.")
                                      .Input("X", "input tensor")
                                      .Output("Out", "[1], X's type")
                                      .InferShape(SquaredL2NormShape)
                                      .CpuKernel(SquaredL2NormKernel)
                                      .DefaultGrad());

RILL_REGISTER_OP(squared_l2_norm_grad,
                 OpSchema("squared_l2_norm_grad")
                     .Doc("X@GRAD = 2 X Out@GRAD.")
                     .Input("X", "the forward X")
                     .Input("Out", "the forward Out (unused)", kOptional)
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .InferShape(SquaredL2NormGradShape)
                     .CpuKernel(SquaredL2NormGradKernel));

}  // namespace rill
