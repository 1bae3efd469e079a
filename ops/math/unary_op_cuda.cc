// The unary elementwise math ops' CUDA kernels (scale, sqrt, square): outputs
// allocated on the op's device, work launched on the stream the executor is
// launching on (CudaStream::Current()); device code in unary_cuda.cu. The
// checks and their order are the CPU kernels' (scale.h, unary.h, through
// ops/unary_cuda_frame.h): float32 and float64 only, as there.
#include "ops/math/scale.h"
#include "ops/math/unary_cuda.h"
#include "ops/unary_cuda_frame.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

void ScaleCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const ScaleAttrs a = ReadScaleAttrs(ctx);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    out->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::Scale(in, out->mutable_data<T>(), n, static_cast<T>(a.scale), static_cast<T>(a.bias),
                a.bias_after_scale, CudaStream::Current());
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
