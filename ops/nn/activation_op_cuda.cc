// The activation ops' CUDA kernels: outputs allocated on the op's device,
// work launched on the stream the executor is launching on
// (CudaStream::Current()); device code in activation_cuda.cu.
#include "ops/nn/activation_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Out = Launch(X) elementwise, as relu_op.cc, sigmoid_op.cc and tanh_op.cc:
// X's pointer is taken before Out is allocated (Out may be X).
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

// X@GRAD = Launch(Out, Out@GRAD), as relu_op.cc, sigmoid_op.cc and tanh_op.cc
// check it: the type of Out first, then (only when Out@GRAD is there) its
// shape and type; a missing Out@GRAD means zeros (a null dy for the
// launcher). The pointers are taken before X@GRAD is allocated (X@GRAD may be
// Out@GRAD).
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

void ReluCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, "relu: kernel launch",
              [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Relu(x, y, n, s); });
}

void ReluGradCudaKernel(KernelContext& ctx) {
  GradFromOutCuda(ctx, "relu_grad: kernel launch",
                  [](const auto* y, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                    cuda::ReluGrad(y, dy, dx, n, s);
                  });
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
