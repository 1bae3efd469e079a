// cube: Out = X^3, elementwise, with its gradient op — a whole custom op in
// one file: kernels, the gradient maker, and one RILL_PLUGIN block.
#include <rill/rill.h>

namespace {

using namespace rill;

void CubeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    T* out = ctx.Output("Out")->Allocate<T>(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] * in[i] * in[i];
  });
}

// X@GRAD = 3 X^2 Out@GRAD
void CubeGradKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input("Out@GRAD");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const T* g = dout.data<T>();
    T* dx = ctx.Output("X@GRAD")->Allocate<T>(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) dx[i] = 3 * in[i] * in[i] * g[i];
  });
}

// The ops append_backward adds for a cube op.
std::vector<proto::OpDesc> CubeGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("cube_grad");
  SetInput(&grad, "X", {InputVar(fwd, "X")});
  SetInput(&grad, "Out@GRAD", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_PLUGIN(registry) {
  registry.Add(OpSchema("cube")
                   .Doc("Out = X^3, elementwise.")
                   .Input("X", "input tensor")
                   .Output("Out", "X cubed, same shape and type")
                   .InferShape(SameShapeAs("X", "Out"))
                   .CpuKernel(CubeKernel)
                   .Grad(CubeGrad));
  registry.Add(OpSchema("cube_grad")
                   .Doc("X@GRAD = 3 X^2 Out@GRAD.")
                   .Input("X", "the forward input")
                   .Input("Out@GRAD", "the gradient of Out")
                   .Output("X@GRAD", "the gradient of X")
                   .InferShape(SameShapeAs("X", "X@GRAD"))
                   .CpuKernel(CubeGradKernel));
}
