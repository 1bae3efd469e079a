// The host glue of the CUDA kernels of ops that reduce a whole tensor to one
// element (mean, squared_l2_norm: reduce_op_cuda.cc, norm_compare_op_cuda.cc),
// what reduce_to_one.h is on the CPU: float32 and float64 only, the same
// checks in the same order, outputs allocated on the op's device and the
// device code launched on the stream the executor is launching on
// (CudaStream::Current()). A failed launch throws naming the op.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "rill/kernel_context.h"
#include "runtime/device/cuda_stream.h"

namespace rill {

// Throws when the kernels just launched failed to launch.
inline void CheckReduceToOneLaunch(const char* op) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) CheckCuda(status, StrCat(op, ": kernel launch"));
}

// Out [1] from X: launch(x, out, n, stream) with device pointers of X's type.
template <class Launch>
void ReduceToOneCudaForward(KernelContext& ctx, const char* op, Launch launch) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    out->Allocate(DataTypeOf<T>(), {1}, ctx.place());
    launch(in, out->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckReduceToOneLaunch(op);
}

// X@GRAD from X and Out@GRAD: launch(x, dout, dx, n, stream), dout null when
// Out@GRAD is missing (zero); nothing when X@GRAD is unbound.
template <class Launch>
void ReduceToOneCudaBackward(KernelContext& ctx, const char* op, Launch launch) {
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
    const T* in = x.data<T>();  // as on the CPU: X must hold memory of X's type
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    launch(in, dout, dx->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckReduceToOneLaunch(op);
}

}  // namespace rill
