// The binary elementwise math ops' CUDA kernels (elementwise_add, _sub, _mul,
// _div, _max and their gradients): outputs allocated on the op's device, work
// launched on the stream the executor is launching on (CudaStream::Current());
// device code in binary_cuda.cu. The checks, their order and their messages
// follow the CPU kernels (ElementwiseForward and ElementwiseBackward in
// elementwise.h): float32 and float64 only, as there.
#include "ops/math/binary_cuda.h"
#include "ops/math/elementwise.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Out = X op Y, Y broadcast against X at `axis`. Pointers are read before Out
// is allocated: Out may be X (in-place update).
void ForwardCuda(KernelContext& ctx, cuda::BinaryOp op, const char* what) {
  const Tensor& x_t = ctx.Input("X");
  const Tensor& y_t = ctx.Input("Y");
  RILL_CHECK(x_t.dtype() == y_t.dtype(), kInvalidArgument, "X is ", x_t.Describe(), " but Y is ",
             y_t.Describe(), ": types differ");
  const BroadcastSplit s = SplitForBroadcast(x_t.shape(), y_t.shape(), ctx.Attr<int>("axis"));
  Tensor* out_t = ctx.Output("Out");
  VisitFloatType(x_t.dtype(), [&]<class T>() {
    const T* x = x_t.data<T>();
    const T* y = y_t.data<T>();
    const Shape shape = x_t.shape();
    out_t->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::BinaryForward(op, x, y, out_t->mutable_data<T>(), s.pre, s.n, s.post,
                        CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), what);
}

// X@GRAD elementwise, then Y@GRAD summed over the broadcast dims (two launches
// on one stream, in the CPU's order). A missing Out@GRAD means zeros; an
// unbound gradient output is not computed.
void BackwardCuda(KernelContext& ctx, cuda::BinaryOp op, const char* what) {
  const bool want_dx = ctx.HasOutput("X@GRAD");
  const bool want_dy = ctx.HasOutput("Y@GRAD");
  if (!want_dx && !want_dy) return;
  const Tensor& x_t = ctx.Input("X");
  const Tensor& y_t = ctx.Input("Y");
  const bool has_dout = ctx.InputReady("Out@GRAD");
  const BroadcastSplit s = SplitForBroadcast(x_t.shape(), y_t.shape(), ctx.Attr<int>("axis"));
  if (has_dout) {
    const Tensor& d = ctx.Input("Out@GRAD");
    RILL_CHECK(d.shape() == x_t.shape() && d.dtype() == x_t.dtype(), kInvalidArgument,
               "Out@GRAD is ", d.Describe(), " but X is ", x_t.Describe());
  }
  VisitFloatType(x_t.dtype(), [&]<class T>() {
    const T* x = x_t.data<T>();
    const T* y = y_t.data<T>();
    const T* dout = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const Shape x_shape = x_t.shape();
    const Shape y_shape = y_t.shape();
    T* dx = nullptr;
    T* dy = nullptr;
    if (want_dx) {
      Tensor* t = ctx.Output("X@GRAD");
      t->Allocate(DataTypeOf<T>(), x_shape, ctx.place());
      dx = t->mutable_data<T>();
    }
    if (want_dy) {
      Tensor* t = ctx.Output("Y@GRAD");
      t->Allocate(DataTypeOf<T>(), y_shape, ctx.place());
      dy = t->mutable_data<T>();
    }
    const cudaStream_t stream = CudaStream::Current();
    if (dx) cuda::BinaryGradX(op, x, y, dout, dx, s.pre, s.n, s.post, stream);
    if (dy) cuda::BinaryGradY(op, x, y, dout, dy, s.pre, s.n, s.post, stream);
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
