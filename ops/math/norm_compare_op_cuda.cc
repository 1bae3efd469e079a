// The CUDA kernels of squared_l2_norm, squared_l2_norm_grad and less_than:
// outputs allocated on the op's device, work launched on the stream the
// executor is launching on (CudaStream::Current()); device code in
// norm_compare_cuda.cu. The checks, their order and their messages follow
// the CPU kernels (reduce_to_one.h's, made by reduce_to_one_cuda.h, for
// squared_l2_norm and its gradient: float32 and float64 only; less_than's,
// shared with it in less_than_check.h: every data type).
#include "ops/math/less_than_check.h"
#include "ops/math/norm_compare_cuda.h"
#include "ops/math/reduce_to_one_cuda.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// Out [1] = the sum of X's squared elements, added in the CPU's order.
void SquaredL2NormCudaKernel(KernelContext& ctx) {
  ReduceToOneCudaForward(ctx, "squared_l2_norm",
                         []<class T>(const T* x, T* out, int64_t n, cudaStream_t stream) {
                           cuda::SquaredL2Norm(x, out, n, stream);
                         });
}

// X@GRAD = 2 X Out@GRAD; a missing Out@GRAD means zero.
void SquaredL2NormGradCudaKernel(KernelContext& ctx) {
  ReduceToOneCudaBackward(
      ctx, "squared_l2_norm_grad",
      []<class T>(const T* x, const T* dout, T* dx, int64_t n, cudaStream_t stream) {
        cuda::SquaredL2NormGrad(x, dout, dx, n, stream);
      });
}

// Out = int32(X < Y), Y of X's shape or of one element.
void LessThanCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  CheckLessThanInputs(x, y);
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
