// The activation ops' CUDA kernels (relu, sigmoid, tanh, gelu): outputs allocated on the op's
// device, work launched on the stream the executor is launching on (CudaStream::Current()); device
// code in activation_cuda.cu. The checks and their order are the CPU kernels' (unary.h's forward
// frame, activation_grad.h), through ops/unary_cuda_frame.h.
#include "ops/nn/activation_cuda.h"
#include "ops/unary_cuda_frame.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

void ReluCudaKernel(KernelContext& ctx) {
  UnaryForwardCuda(
      ctx, "relu: kernel launch",
      [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Relu(x, y, n, s); });
}

void ReluGradCudaKernel(KernelContext& ctx) {
  ActivationBackwardCuda(ctx, "relu_grad: kernel launch",
                         [](const auto* y, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                           cuda::ReluGrad(y, dy, dx, n, s);
                         });
}

void SigmoidCudaKernel(KernelContext& ctx) {
  UnaryForwardCuda(
      ctx, "sigmoid: kernel launch",
      [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Sigmoid(x, y, n, s); });
}

void SigmoidGradCudaKernel(KernelContext& ctx) {
  ActivationBackwardCuda(ctx, "sigmoid_grad: kernel launch",
                         [](const auto* y, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                           cuda::SigmoidGrad(y, dy, dx, n, s);
                         });
}

void TanhCudaKernel(KernelContext& ctx) {
  UnaryForwardCuda(
      ctx, "tanh: kernel launch",
      [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Tanh(x, y, n, s); });
}

void TanhGradCudaKernel(KernelContext& ctx) {
  ActivationBackwardCuda(ctx, "tanh_grad: kernel launch",
                         [](const auto* y, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                           cuda::TanhGrad(y, dy, dx, n, s);
                         });
}

void GeluCudaKernel(KernelContext& ctx) {
  UnaryForwardCuda(
      ctx, "gelu: kernel launch",
      [](const auto* x, auto* y, int64_t n, cudaStream_t s) { cuda::Gelu(x, y, n, s); });
}

// gelu_grad reads X (unary.h's backward frame, as the CPU kernel).
void GeluGradCudaKernel(KernelContext& ctx) {
  UnaryBackwardCuda(ctx, "X", "gelu_grad: kernel launch",
                    [](const auto* x, const auto* dy, auto* dx, int64_t n, cudaStream_t s) {
                      cuda::GeluGrad(x, dy, dx, n, s);
                    });
}

}  // namespace

RILL_REGISTER_KERNEL(relu, Cuda, ReluCudaKernel);
RILL_REGISTER_KERNEL(relu_grad, Cuda, ReluGradCudaKernel);
RILL_REGISTER_KERNEL(sigmoid, Cuda, SigmoidCudaKernel);
RILL_REGISTER_KERNEL(sigmoid_grad, Cuda, SigmoidGradCudaKernel);
RILL_REGISTER_KERNEL(tanh, Cuda, TanhCudaKernel);
RILL_REGISTER_KERNEL(tanh_grad, Cuda, TanhGradCudaKernel);
RILL_REGISTER_KERNEL(gelu, Cuda, GeluCudaKernel);
RILL_REGISTER_KERNEL(gelu_grad, Cuda, GeluGradCudaKernel);

}  // namespace rill
