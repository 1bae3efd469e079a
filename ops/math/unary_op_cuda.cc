// The unary elementwise math ops' CUDA kernels (scale, sqrt, square): outputs
// allocated on the op's device, work launched on the stream the executor is
// launching on (CudaStream::Current()); device code in unary_cuda.cu. The
// checks and their order follow the CPU kernels (scale_op.cc, unary.h):
// float32 and float64 only, as there.
#include "ops/math/unary_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Out = Launch(X), as UnaryForward: X's pointer is taken before Out is
// allocated (Out may be X).
template <class Launch>
void UnaryForwardCuda(KernelContext& ctx, const char* what, Launch launch) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    out->Allocate(DataTypeOf<T>(), shape, ctx.place());
    launch(in, out->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), what);
}

// X@GRAD = Launch(v, Out@GRAD) with v read from `from` ("X" or "Out"), as
// UnaryBackward: Out@GRAD, when there, must match v in shape and type; a
// missing Out@GRAD means zeros (a null dy for the launcher).
template <class Launch>
void UnaryBackwardCuda(KernelContext& ctx, const char* from, const char* what, Launch launch) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& v = ctx.Input(from);
  const bool has_dout = ctx.InputReady("Out@GRAD");
  if (has_dout) {
    const Tensor& d = ctx.Input("Out@GRAD");
    RILL_CHECK(d.shape() == v.shape() && d.dtype() == v.dtype(), kInvalidArgument, "Out@GRAD is ",
               d.Describe(), " but ", from, " is ", v.Describe());
  }
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(v.dtype(), [&]<class T>() {
    const T* in = v.data<T>();
    const T* dout = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const Shape shape = v.shape();
    const int64_t n = v.numel();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    launch(in, dout, dx->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), what);
}

// The attributes are floats (defaults 1, 0, true in the schema), converted to
// T before use as on the CPU.
void ScaleCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const float scale = ctx.Attr<float>("scale");
  const float bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    out->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::Scale(in, out->mutable_data<T>(), n, static_cast<T>(scale), static_cast<T>(bias), after,
                CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "scale: kernel launch");
}

void SqrtCudaKernel(KernelContext& ctx) {
  UnaryForwardCuda(
      ctx, "sqrt: kernel launch",
      [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Sqrt(x, y, n, s); });
}

void SqrtGradCudaKernel(KernelContext& ctx) {
  UnaryBackwardCuda(ctx, "Out", "sqrt_grad: kernel launch",
                    [](const auto* y, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                      cuda::SqrtGrad(y, dy, dx, n, s);
                    });
}

void SquareCudaKernel(KernelContext& ctx) {
  UnaryForwardCuda(
      ctx, "square: kernel launch",
      [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Square(x, y, n, s); });
}

void SquareGradCudaKernel(KernelContext& ctx) {
  UnaryBackwardCuda(ctx, "X", "square_grad: kernel launch",
                    [](const auto* x, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                      cuda::SquareGrad(x, dy, dx, n, s);
                    });
}

}  // namespace

RILL_REGISTER_KERNEL(scale, Cuda, ScaleCudaKernel);
RILL_REGISTER_KERNEL(sqrt, Cuda, SqrtCudaKernel);
RILL_REGISTER_KERNEL(sqrt_grad, Cuda, SqrtGradCudaKernel);
RILL_REGISTER_KERNEL(square, Cuda, SquareCudaKernel);
RILL_REGISTER_KERNEL(square_grad, Cuda, SquareGradCudaKernel);

}  // namespace rill
