// The CUDA kernels of mean, mean_grad and sum: outputs allocated on the op's
// device, work launched on the stream the executor is launching on
// (CudaStream::Current()); device code in reduce_cuda.cu. The checks, their
// order and their messages follow the CPU kernels (reduce_to_one.h for mean
// and mean_grad: float32 and float64 only; sum_op.cc: every data type).
#include <vector>

#include "ops/math/reduce_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Out [1] = sum of X / numel(X), summed in the CPU's order (NaN for an empty X).
void MeanCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    out->Allocate(DataTypeOf<T>(), {1}, ctx.place());
    cuda::Mean(in, out->mutable_data<T>(), n, static_cast<T>(n), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "mean: kernel launch");
}

// X@GRAD = Out@GRAD[0] / numel(X) everywhere; a missing Out@GRAD means zero.
void MeanGradCudaKernel(KernelContext& ctx) {
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
    (void)x.data<T>();  // as on the CPU: X must hold memory of X's type
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::MeanGrad(dout, dx->mutable_data<T>(), n, static_cast<T>(n), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "mean_grad: kernel launch");
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
