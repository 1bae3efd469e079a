// The CUDA kernels of mean, mean_grad and sum: outputs allocated on the op's
// device, work launched on the stream the executor is launching on
// (CudaStream::Current()); device code in reduce_cuda.cu. The checks, their
// order and their messages follow the CPU kernels (reduce_to_one.h's, made by
// reduce_to_one_cuda.h, for mean and mean_grad: float32 and float64 only;
// sum_op.cc: every data type).
#include <vector>

#include "ops/math/reduce_cuda.h"
#include "ops/math/reduce_to_one_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

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
  const int count = ctx.InputCount("X");
  const Tensor& first = ctx.Input("X", 0);
  for (int i = 1; i < count; ++i) {
    const Tensor& x = ctx.Input("X", i);
    RILL_CHECK(x.shape() == first.shape() && x.dtype() == first.dtype(), kInvalidArgument, "input ",
               i, " (", ctx.InputName("X", i), ") is ", x.Describe(), " but input 0 (",
               ctx.InputName("X", 0), ") is ", first.Describe());
  }
  Tensor* out_t = ctx.Output("Out");
  VisitDataType(first.dtype(), [&]<class T>() {
    // Read every input pointer before Out is allocated: Out may be one of them.
    std::vector<const T*> xs;
    for (int i = 0; i < count; ++i) xs.push_back(ctx.Input("X", i).data<T>());
    const Shape shape = first.shape();
    const int64_t n = first.numel();
    out_t->Allocate(DataTypeOf<T>(), shape, ctx.place());
    T* out = out_t->mutable_data<T>();
    int in_place = -1;  // the input that Out is, if any (pointers compared, never read)
    for (int i = 0; i < count; ++i) {
      if (xs[i] == out) in_place = i;
    }
    cuda::Sum(xs.data(), count, in_place, out, n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "sum: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(mean, Cuda, MeanCudaKernel);
RILL_REGISTER_KERNEL(mean_grad, Cuda, MeanGradCudaKernel);
RILL_REGISTER_KERNEL(sum, Cuda, SumCudaKernel);

}  // namespace rill
