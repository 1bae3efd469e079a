// CUDA kernels of pool2d and pool2d_grad: the CPU kernels' checks made on the
// host (conv_pool_geometry.h's CheckPoolKernel, which they share), outputs
// allocated on the op's device, work launched on the stream the executor is
// launching on (CudaStream::Current()); device code in pool_cuda.cu.
#include "ops/nn/conv_pool_geometry.h"
#include "ops/nn/pool_cuda.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

void Pool2dCudaKernel(KernelContext& ctx) {
  const PoolRun run = CheckPoolKernel(ctx, false);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(run.x->dtype(), [&]<class T>() {
    out->Allocate(DataTypeOf<T>(), PoolOutputShape(run.geo), ctx.place());
    cuda::Pool2d(run.x->data<T>(), out->mutable_data<T>(), run.geo, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "pool2d: kernel launch");
}

void Pool2dGradCudaKernel(KernelContext& ctx) {
  const PoolRun run = CheckPoolKernel(ctx, true);
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(run.x->dtype(), [&]<class T>() {
    const T* dy = run.dout ? run.dout->data<T>() : nullptr;
    const Shape x_shape = run.x->shape();
    dx->Allocate(DataTypeOf<T>(), x_shape, ctx.place());
    cuda::Pool2dGrad(run.x->data<T>(), dy, dx->mutable_data<T>(), run.geo, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "pool2d_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(pool2d, Cuda, Pool2dCudaKernel);
RILL_REGISTER_KERNEL(pool2d_grad, Cuda, Pool2dGradCudaKernel);

}  // namespace rill
