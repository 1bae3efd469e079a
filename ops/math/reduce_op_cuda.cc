// The CUDA kernels of mean, mean_grad and sum: outputs allocated on the op's
// device, work launched on the stream the executor is launching on
// (CudaStream::Current()); device code in reduce_cuda.cu. The checks, their
// order and their messages follow the CPU kernels (reduce_to_one.h's, made by
// reduce_to_one_cuda.h, for mean and mean_grad: float32 and float64 only;
// sum_op.cc, through sum.h: every data type).
#include <vector>

#include "ops/math/reduce_cuda.h"
#include "ops/math/reduce_to_one_cuda.h"
#include "ops/math/sum.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// Out [1] = sum of X / numel(X), summed in the CPU's order (NaN for an empty X).
void MeanCudaKernel(KernelContext& ctx) {
  ReduceToOneCudaForward(ctx, "mean",
                         []<class T>(const T* x, T* out, int64_t n, cudaStream_t stream) {
                           cuda::Mean(x, out, n, static_cast<T>(n), stream);
                         });
}

// X@GRAD = Out@GRAD[0] / numel(X) everywhere; a missing Out@GRAD means zero.
void MeanGradCudaKernel(KernelContext& ctx) {
  ReduceToOneCudaBackward(
      ctx, "mean_grad",
      []<class T>(const T*, const T* dout, T* dx, int64_t n, cudaStream_t stream) {
        cuda::MeanGrad(dout, dx, n, static_cast<T>(n), stream);
      });
}

// Out = X[0] + X[1] + ...; Out may be one of the inputs (accumulates in place).
void SumCudaKernel(KernelContext& ctx) {
  SumFrame(ctx, ctx.place(),
           [&]<class T>(const std::vector<const T*>& xs, int in_place, T* out, int64_t n) {
             cuda::Sum(xs.data(), static_cast<int>(xs.size()), in_place, out, n,
                       CudaStream::Current());
           });
  CheckCuda(cudaGetLastError(), "sum: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(mean, Cuda, MeanCudaKernel);
RILL_REGISTER_KERNEL(mean_grad, Cuda, MeanGradCudaKernel);
RILL_REGISTER_KERNEL(sum, Cuda, SumCudaKernel);

}  // namespace rill
