// scale: Out = scale * X + bias (bias_after_scale) or scale * (X + bias).
#include "ops/math/scale.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void ScaleKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const ScaleAttrs a = ReadScaleAttrs(ctx);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    T* o = out->Allocate<T>(x.shape());
    const T s = static_cast<T>(a.scale);
    const T b = static_cast<T>(a.bias);
    const int64_t n = x.numel();
    if (a.bias_after_scale) {
      for (int64_t i = 0; i < n; ++i) o[i] = s * in[i] + b;
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = s * (in[i] + b);
    }
  });
}

// d(scale*X + b)/dX = scale: the gradient is another scale op, without bias.
std::vector<proto::OpDesc> ScaleGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("scale");
  SetInput(&grad, "X", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "Out", {GradVarName(InputVar(fwd, "X"))});
  const proto::Attr* scale = FindAttr(fwd, "scale");
  SetAttr(&grad, "scale", scale ? AttrValue<float>(*scale) : 1.0f);
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(scale, OpSchema("scale")
                            .Doc("Out = scale * X + bias, or scale * (X + bias).")
                            .Input("X", "input tensor")
                            .Output("Out", "result, same shape and type as X")
                            .Attr("scale", 1.0f, "the multiplier")
                            .Attr("bias", 0.0f, "the added constant")
                            .Attr("bias_after_scale", true, "add bias after scaling (else before)")
                            .InferShape(SameShapeAs("X", "Out"))
                            .CpuKernel(ScaleKernel)
                            .Grad(ScaleGrad));

}  // namespace rill
