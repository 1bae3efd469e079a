// The binary elementwise math ops' CUDA kernels (elementwise_add, _sub, _mul,
// _div, _max and their gradients): outputs allocated on the op's device, work
// launched on the stream the executor is launching on (CudaStream::Current());
// device code in binary_cuda.cu. The checks, their order and their messages
// follow the CPU kernels (ElementwiseForward and ElementwiseBackward in
// elementwise.h): float32 and float64 only, as there.
#include "ops/math/binary_cuda.h"
#include "ops/math/elementwise.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// Out = X op Y, Y broadcast against X at `axis` (ElementwiseForwardFrame).
void ForwardCuda(KernelContext& ctx, cuda::BinaryOp op, const char* what) {
  ElementwiseForwardFrame(
      ctx, ctx.place(), [&]<class T>(const T* x, const T* y, T* out, const BroadcastSplit& s) {
        cuda::BinaryForward(op, x, y, out, s.pre, s.n, s.post, CudaStream::Current());
      });
  CheckCuda(cudaGetLastError(), what);
}

// X@GRAD elementwise, then Y@GRAD summed over the broadcast dims (two launches
// on one stream, in the CPU's order; ElementwiseBackwardFrame). A missing
// Out@GRAD means zeros; an unbound gradient output is not computed.
void BackwardCuda(KernelContext& ctx, cuda::BinaryOp op, const char* what) {
  ElementwiseBackwardFrame(
      ctx, ctx.place(),
      [&]<class T>(const T* x, const T* y, const T* dout, T* dx, T* dy, const BroadcastSplit& s) {
        const cudaStream_t stream = CudaStream::Current();
        if (dx) cuda::BinaryGradX(op, x, y, dout, dx, s.pre, s.n, s.post, stream);
        if (dy) {
          const int64_t scratch_size = dout ? cuda::BinaryGradYScratch(s.pre, s.n, s.post) : 0;
          Tensor scratch;  // freed here, reused only after the stream has run (cuda_memory.h)
          if (scratch_size > 0) scratch.Allocate(DataTypeOf<T>(), {scratch_size}, ctx.place());
          cuda::BinaryGradY(op, x, y, dout, dy, s.pre, s.n, s.post,
                            scratch_size > 0 ? scratch.mutable_data<T>() : nullptr, stream);
        }
      });
  CheckCuda(cudaGetLastError(), what);
}

void AddCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, cuda::BinaryOp::kAdd, "elementwise_add: kernel launch");
}
void SubCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, cuda::BinaryOp::kSub, "elementwise_sub: kernel launch");
}
void MulCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, cuda::BinaryOp::kMul, "elementwise_mul: kernel launch");
}
void DivCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, cuda::BinaryOp::kDiv, "elementwise_div: kernel launch");
}
void MaxCudaKernel(KernelContext& ctx) {
  ForwardCuda(ctx, cuda::BinaryOp::kMax, "elementwise_max: kernel launch");
}
void AddGradCudaKernel(KernelContext& ctx) {
  BackwardCuda(ctx, cuda::BinaryOp::kAdd, "elementwise_add_grad: kernel launch");
}
void SubGradCudaKernel(KernelContext& ctx) {
  BackwardCuda(ctx, cuda::BinaryOp::kSub, "elementwise_sub_grad: kernel launch");
}
void MulGradCudaKernel(KernelContext& ctx) {
  BackwardCuda(ctx, cuda::BinaryOp::kMul, "elementwise_mul_grad: kernel launch");
}
void DivGradCudaKernel(KernelContext& ctx) {
  BackwardCuda(ctx, cuda::BinaryOp::kDiv, "elementwise_div_grad: kernel launch");
}
void MaxGradCudaKernel(KernelContext& ctx) {
  BackwardCuda(ctx, cuda::BinaryOp::kMax, "elementwise_max_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(elementwise_add, Cuda, AddCudaKernel);
RILL_REGISTER_KERNEL(elementwise_sub, Cuda, SubCudaKernel);
RILL_REGISTER_KERNEL(elementwise_mul, Cuda, MulCudaKernel);
RILL_REGISTER_KERNEL(elementwise_div, Cuda, DivCudaKernel);
RILL_REGISTER_KERNEL(elementwise_max, Cuda, MaxCudaKernel);
RILL_REGISTER_KERNEL(elementwise_add_grad, Cuda, AddGradCudaKernel);
RILL_REGISTER_KERNEL(elementwise_sub_grad, Cuda, SubGradCudaKernel);
RILL_REGISTER_KERNEL(elementwise_mul_grad, Cuda, MulGradCudaKernel);
RILL_REGISTER_KERNEL(elementwise_div_grad, Cuda, DivGradCudaKernel);
RILL_REGISTER_KERNEL(elementwise_max_grad, Cuda, MaxGradCudaKernel);

}  // namespace rill
