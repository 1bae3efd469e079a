// CUDA kernels of batch_norm and layer_norm (and their gradients): the CPU
// kernels' checks made on the host (batch_norm_util.h, layer_norm_util.h),
// outputs allocated on the op's device, work launched on the stream the
// executor is launching on (CudaStream::Current()); device code in
// norm_cuda.cu.
#include "ops/nn/batch_norm_util.h"
#include "ops/nn/layer_norm_util.h"
#include "ops/nn/norm_cuda.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// Zeroes `t`'s elements on the stream (all-zero bytes are 0.0).
void ZeroOnStream(Tensor* t, const char* what) {
  if (t == nullptr || t->numel() == 0) return;
  CheckCuda(cudaMemsetAsync(t->raw_data(), 0, t->bytes(), CudaStream::Current()), what);
}

void BatchNormCudaKernel(KernelContext& ctx) {
  const BatchNormForward f = CheckBatchNormKernel(ctx);
  const BatchNormDims& d = f.dims;
  VisitFloatType(f.x->dtype(), [&]<class T>() {
    // Inputs are read before outputs are allocated: MeanOut is Mean, VarianceOut Variance.
    const T* x = f.x->data<T>();
    const T* scale = f.scale->data<T>();
    const T* bias = f.bias->data<T>();
    const T* mean_in = f.mean->data<T>();
    const T* var_in = f.variance->data<T>();
    const Shape x_shape = f.x->shape();
    const Place place = ctx.place();
    auto allocate = [&](const char* slot, const Shape& shape) {
      Tensor* t = ctx.Output(slot);
      t->Allocate(DataTypeOf<T>(), shape, place);
      return t->mutable_data<T>();
    };
    T* y = allocate("Y", x_shape);
    T* mean_out = allocate("MeanOut", {d.c});
    T* var_out = allocate("VarianceOut", {d.c});
    T* saved_mean = allocate("SavedMean", {d.c});
    T* saved_inv_std = allocate("SavedVariance", {d.c});
    cuda::BatchNorm(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean,
                    saved_inv_std, d.n, d.c, d.hw, static_cast<T>(f.momentum),
                    static_cast<T>(f.epsilon), f.is_test, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "batch_norm: kernel launch");
}

void BatchNormGradCudaKernel(KernelContext& ctx) {
  const BatchNormBackward b = CheckBatchNormGradKernel(ctx);
  const BatchNormDims& d = b.dims;
  Tensor* dx_t = ctx.HasOutput("X@GRAD") ? ctx.Output("X@GRAD") : nullptr;
  Tensor* dscale_t = ctx.HasOutput("Scale@GRAD") ? ctx.Output("Scale@GRAD") : nullptr;
  Tensor* dbias_t = ctx.HasOutput("Bias@GRAD") ? ctx.Output("Bias@GRAD") : nullptr;
  VisitFloatType(b.x->dtype(), [&]<class T>() {
    const T* x = b.x->data<T>();
    const T* dy = b.dy ? b.dy->data<T>() : nullptr;
    const T* scale = b.scale->data<T>();
    const T* mean = b.saved_mean->data<T>();
    const T* inv_std = b.saved_inv_std->data<T>();
    const Shape x_shape = b.x->shape();
    const Place place = ctx.place();
    auto allocate = [&](Tensor* t, const Shape& shape) -> T* {
      if (t == nullptr) return nullptr;
      t->Allocate(DataTypeOf<T>(), shape, place);
      if (dy == nullptr) ZeroOnStream(t, "batch_norm_grad: zeroing a gradient");
      return t->mutable_data<T>();
    };
    T* dx = allocate(dx_t, x_shape);
    T* dscale = allocate(dscale_t, {d.c});
    T* dbias = allocate(dbias_t, {d.c});
    if (dy == nullptr || (dx == nullptr && dscale == nullptr && dbias == nullptr)) return;
    cuda::BatchNormGrad(x, scale, mean, inv_std, dy, dx, dscale, dbias, d.n, d.c, d.hw, b.is_test,
                        CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "batch_norm_grad: kernel launch");
}

void LayerNormCudaKernel(KernelContext& ctx) {
  const LayerNormRun r = CheckLayerNormKernel(ctx, false);
  Tensor* y_t = ctx.Output("Y");
  Tensor* mean_t = ctx.Output("Mean");
  Tensor* var_t = ctx.Output("Variance");
  VisitFloatType(r.x->dtype(), [&]<class T>() {
    const T* x = r.x->data<T>();
    const T* scale = r.scale ? r.scale->data<T>() : nullptr;
    const T* bias = r.bias ? r.bias->data<T>() : nullptr;
    const Shape x_shape = r.x->shape();
    const Place place = ctx.place();
    y_t->Allocate(DataTypeOf<T>(), x_shape, place);
    mean_t->Allocate(DataTypeOf<T>(), {r.dims.rows}, place);
    var_t->Allocate(DataTypeOf<T>(), {r.dims.rows}, place);
    cuda::LayerNorm(x, scale, bias, y_t->mutable_data<T>(), mean_t->mutable_data<T>(),
                    var_t->mutable_data<T>(), r.dims.rows, r.dims.cols, static_cast<T>(r.epsilon),
                    CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "layer_norm: kernel launch");
}

void LayerNormGradCudaKernel(KernelContext& ctx) {
  const LayerNormRun r = CheckLayerNormKernel(ctx, true);
  Tensor* dx_t = ctx.HasOutput("X@GRAD") ? ctx.Output("X@GRAD") : nullptr;
  Tensor* dscale_t = ctx.HasOutput("Scale@GRAD") ? ctx.Output("Scale@GRAD") : nullptr;
  Tensor* dbias_t = ctx.HasOutput("Bias@GRAD") ? ctx.Output("Bias@GRAD") : nullptr;
  VisitFloatType(r.x->dtype(), [&]<class T>() {
    const T* x = r.x->data<T>();
    const T* dy = r.dy ? r.dy->data<T>() : nullptr;
    const T* scale = r.scale ? r.scale->data<T>() : nullptr;
    const T* mean = r.mean->data<T>();
    const T* var = r.variance->data<T>();
    const Shape x_shape = r.x->shape();
    const Place place = ctx.place();
    auto allocate = [&](Tensor* t, const Shape& shape) -> T* {
      if (t == nullptr) return nullptr;
      t->Allocate(DataTypeOf<T>(), shape, place);
      if (dy == nullptr) ZeroOnStream(t, "layer_norm_grad: zeroing a gradient");
      return t->mutable_data<T>();
    };
    T* dx = allocate(dx_t, x_shape);
    T* dscale = allocate(dscale_t, {r.dims.cols});
    T* dbias = allocate(dbias_t, {r.dims.cols});
    if (dy == nullptr) return;
    cuda::LayerNormGrad(x, scale, mean, var, dy, dx, dscale, dbias, r.dims.rows, r.dims.cols,
                        static_cast<T>(r.epsilon), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "layer_norm_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(batch_norm, Cuda, BatchNormCudaKernel);
RILL_REGISTER_KERNEL(batch_norm_grad, Cuda, BatchNormGradCudaKernel);
RILL_REGISTER_KERNEL(layer_norm, Cuda, LayerNormCudaKernel);
RILL_REGISTER_KERNEL(layer_norm_grad, Cuda, LayerNormGradCudaKernel);

}  // namespace rill
