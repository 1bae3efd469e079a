// The tensor ops' CUDA kernels (fill_constant, fill_zeros_like, assign):
// outputs allocated on the op's device, work queued on the stream the
// executor is launching on (CudaStream::Current()); device code in
// tensor_cuda.cu. Every data type the CPU kernels take is taken here.
#include "ops/tensor/fill_constant_util.h"
#include "ops/tensor/tensor_cuda.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

void FillConstantCudaKernel(KernelContext& ctx) {
  const FillConstantAttrs attrs = ReadFillConstantAttrs(ctx);
  Tensor* out = ctx.Output("Out");
  out->Allocate(attrs.dtype, attrs.shape, ctx.place());
  // The value is converted on the host, as Tensor::Fill converts it.
  VisitDataType(attrs.dtype, [&]<class T>() {
    cuda::Fill(out->mutable_data<T>(), static_cast<T>(attrs.value), out->numel(),
               CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "fill_constant: kernel launch");
}

void FillZerosLikeCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  // Copies: Out may be the same variable as X.
  const Shape shape = x.shape();
  const DataType dtype = x.dtype();
  Tensor* out = ctx.Output("Out");
  out->Allocate(dtype, shape, ctx.place());
  if (out->numel() > 0) {
    CheckCuda(cuda::Zero(out->raw_data(), out->bytes(), CudaStream::Current()),
              "fill_zeros_like: cudaMemsetAsync");
  }
}

void AssignCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  if (out == &x) return;  // Out is X
  // Allocate keeps Out's buffer when it can (and not when it shares X's).
  const Shape shape = x.shape();
  out->Allocate(x.dtype(), shape, ctx.place());
  if (x.numel() > 0) {
    CheckCuda(cuda::Copy(out->raw_data(), x.raw_data(), x.bytes(), CudaStream::Current()),
              "assign: cudaMemcpyAsync");
  }
}

}  // namespace

RILL_REGISTER_KERNEL(fill_constant, Cuda, FillConstantCudaKernel);
RILL_REGISTER_KERNEL(fill_zeros_like, Cuda, FillZerosLikeCudaKernel);
RILL_REGISTER_KERNEL(assign, Cuda, AssignCudaKernel);

}  // namespace rill
