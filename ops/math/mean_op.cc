// mean: Out [1] = the mean of every element of X (NaN for an empty X, as in
// NumPy and PyTorch).
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void MeanKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    T sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += in[i];
    out->Allocate<T>({1})[0] = sum / static_cast<T>(n);
  });
}

void MeanShape(ShapeContext& ctx) { ctx.SetOutput("Out", {1}, ctx.InputType("X")); }

// X@GRAD = Out@GRAD / numel(X) everywhere.
void MeanGradKernel(KernelContext& ctx) {
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
      g = dout.data<T>()[0] / static_cast<T>(x.numel());
    }
    const Shape shape = x.shape();
    T* dx = dx_t->Allocate<T>(shape);
    for (int64_t i = 0; i < dx_t->numel(); ++i) dx[i] = g;
  });
}

void MeanGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

}  // namespace

RILL_REGISTER_OP(mean, OpSchema("mean")
                           .Doc("Out [1] = mean of all elements of X.")
                           .Input("X", "input tensor")
                           .Output("Out", "[1], X's type")
                           .InferShape(MeanShape)
                           .CpuKernel(MeanKernel)
                           .DefaultGrad());

RILL_REGISTER_OP(mean_grad, OpSchema("mean_grad")
                                .Doc("X@GRAD = Out@GRAD / numel(X) everywhere.")
                                .Input("X", "the forward X (for its shape)")
                                .Input("Out", "the forward Out (unused)", kOptional)
                                .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                                .Output("X@GRAD", "gradient of X", kOptional)
                                .InferShape(MeanGradShape)
                                .CpuKernel(MeanGradKernel));

}  // namespace rill
