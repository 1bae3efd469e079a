// The CUDA kernels of squared_l2_norm, squared_l2_norm_grad and less_than:
// outputs allocated on the op's device, work launched on the stream the
// executor is launching on (CudaStream::Current()); device code in
// norm_compare_cuda.cu. The checks, their order and their messages follow
// the CPU kernels (reduce_to_one.h for squared_l2_norm and its gradient:
// float32 and float64 only; less_than_op.cc: every data type).
#include "ops/math/norm_compare_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Out [1] = the sum of X's squared elements, added in the CPU's order.
void SquaredL2NormCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    out->Allocate(DataTypeOf<T>(), {1}, ctx.place());
    cuda::SquaredL2Norm(in, out->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "squared_l2_norm: kernel launch");
}

// X@GRAD = 2 X Out@GRAD; a missing Out@GRAD means zero.
void SquaredL2NormGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const bool has_dout = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* dout = nullptr;
    if (has_dout) {
      const Tensor& d = ctx.Input("Out@GRAD");
      RILL_CHECK(d.numel() == 1, kInvalidArgument, "Out@GRAD must hold one element, is ",
                 d.Describe());
      dout = d.data<T>();  // a device pointer: read by the kernel
    }
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::SquaredL2NormGrad(in, dout, dx->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "squared_l2_norm_grad: kernel launch");
}

// Out = int32(X < Y), Y of X's shape or of one element.
void LessThanCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  RILL_CHECK(y.numel() == 1 || y.shape() == x.shape(), kInvalidArgument, "less_than: Y ",
             y.Describe(), " must have X's shape ", ShapeToString(x.shape()), " or one element");
  RILL_CHECK(x.dtype() == y.dtype(), kInvalidArgument, "less_than: X is ", x.Describe(), ", Y is ",
             y.Describe());
  Tensor* out = ctx.Output("Out");
  VisitDataType(x.dtype(), [&]<class T>() {
    const T* left = x.data<T>();
    const T* right = y.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    const bool broadcast = y.numel() == 1;
    out->Allocate(DataType::kInt32, shape, ctx.place());
    cuda::LessThan(left, right, broadcast, out->mutable_data<int32_t>(), n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "less_than: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(squared_l2_norm, Cuda, SquaredL2NormCudaKernel);
RILL_REGISTER_KERNEL(squared_l2_norm_grad, Cuda, SquaredL2NormGradCudaKernel);
RILL_REGISTER_KERNEL(less_than, Cuda, LessThanCudaKernel);

}  // namespace rill
