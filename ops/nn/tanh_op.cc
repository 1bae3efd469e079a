// tanh: Out = tanh(X). Its gradient op reads Out rather than X.
#include <cmath>
#include <vector>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void TanhKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    T* o = out->Allocate<T>(x.shape());
    for (int64_t i = 0; i < n; ++i) o[i] = std::tanh(in[i]);
  });
}

// X@GRAD = Out@GRAD * (1 - Out^2). A missing Out@GRAD means zero.
void TanhGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = ctx.Input("Out");
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(y.dtype(), [&]<class T>() {
    const T* out = y.data<T>();
    const int64_t n = y.numel();
    if (!has_dy) {
      T* g = dx->Allocate<T>(y.shape());
      for (int64_t i = 0; i < n; ++i) g[i] = T(0);
      return;
    }
    const Tensor& dy_t = ctx.Input("Out@GRAD");
    RILL_CHECK(dy_t.shape() == y.shape(), kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(dy_t.shape()), " but Out has shape ", ShapeToString(y.shape()));
    const T* dy = dy_t.data<T>();
    T* g = dx->Allocate<T>(y.shape());
    for (int64_t i = 0; i < n; ++i) g[i] = dy[i] * (T(1) - out[i] * out[i]);
  });
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
