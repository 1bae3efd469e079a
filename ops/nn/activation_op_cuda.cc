// The activation ops' CUDA kernels: outputs allocated on the op's device,
// work launched on the stream the executor is launching on
// (CudaStream::Current()); device code in activation_cuda.cu.
#include "ops/nn/activation_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void ReluCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  out->Allocate(x.dtype(), x.shape(), ctx.place());
  VisitFloatType(x.dtype(), [&]<class T>() {
    cuda::Relu(x.data<T>(), out->mutable_data<T>(), x.numel(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "relu: kernel launch");
}

void ReluGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = ctx.Input("Out");
  const bool has_dy = ctx.InputReady("Out@GRAD");
  if (has_dy) {
    RILL_CHECK(ctx.Input("Out@GRAD").shape() == y.shape(), kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(ctx.Input("Out@GRAD").shape()), " but Out has shape ",
               ShapeToString(y.shape()));
  }
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Allocate(y.dtype(), y.shape(), ctx.place());
  VisitFloatType(y.dtype(), [&]<class T>() {
    cuda::ReluGrad(y.data<T>(), has_dy ? ctx.Input("Out@GRAD").data<T>() : nullptr,
                   dx->mutable_data<T>(), y.numel(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "relu_grad: kernel launch");
}

// Out = Launch(X) elementwise, as sigmoid_op.cc and tanh_op.cc: X's pointer
// is taken before Out is allocated (Out may be X).
template <class Launch>
void ForwardCuda(KernelContext& ctx, const char* what, Launch launch) {
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

// X@GRAD = Launch(Out, Out@GRAD), as sigmoid_op.cc and tanh_op.cc check it:
// the type of Out first, then (only when Out@GRAD is there) its shape and
// type; a missing Out@GRAD means zeros (a null dy for the launcher).
template <class Launch>
void GradFromOutCuda(KernelContext& ctx, const char* what, Launch launch) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = ctx.Input("Out");
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(y.dtype(), [&]<class T>() {
    const T* out = y.data<T>();
    const Shape shape = y.shape();
    const int64_t n = y.numel();
    const T* dy = nullptr;
    if (has_dy) {
      const Tensor& dy_t = ctx.Input("Out@GRAD");
      RILL_CHECK(dy_t.shape() == y.shape(), kInvalidArgument, "Out@GRAD has shape ",
                 ShapeToString(dy_t.shape()), " but Out has shape ", ShapeToString(y.shape()));
      dy = dy_t.data<T>();
    }
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    launch(out, dy, dx->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), what);
}

void SigmoidCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, "sigmoid: kernel launch",
              [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Sigmoid(x, y, n, s); });
}

void SigmoidGradCudaKernel(KernelContext& ctx) {
  GradFromOutCuda(ctx, "sigmoid_grad: kernel launch",
                  [](const auto* y, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                    cuda::SigmoidGrad(y, dy, dx, n, s);
                  });
}

void TanhCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, "tanh: kernel launch",
              [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Tanh(x, y, n, s); });
}

void TanhGradCudaKernel(KernelContext& ctx) {
  GradFromOutCuda(ctx, "tanh_grad: kernel launch",
                  [](const auto* y, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                    cuda::TanhGrad(y, dy, dx, n, s);
                  });
}

}  // namespace

RILL_REGISTER_KERNEL(relu, Cuda, ReluCudaKernel);
RILL_REGISTER_KERNEL(relu_grad, Cuda, ReluGradCudaKernel);
RILL_REGISTER_KERNEL(sigmoid, Cuda, SigmoidCudaKernel);
RILL_REGISTER_KERNEL(sigmoid_grad, Cuda, SigmoidGradCudaKernel);
RILL_REGISTER_KERNEL(tanh, Cuda, TanhCudaKernel);
RILL_REGISTER_KERNEL(tanh_grad, Cuda, TanhGradCudaKernel);

}  // namespace rill
