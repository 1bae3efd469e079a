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

}  // namespace

RILL_REGISTER_KERNEL(relu, Cuda, ReluCudaKernel);
RILL_REGISTER_KERNEL(relu_grad, Cuda, ReluGradCudaKernel);

}  // namespace rill
