// CUDA kernels of top_k and top_k_grad: the CPU kernels' checks made on the
// host, outputs allocated on the op's device, work queued on the stream the
// executor is launching on (CudaStream::Current()); device code in
// top_k_cuda.cu. top_k takes every data type, top_k_grad float32 and
// float64, as on the CPU.
//
// Two things wait for the stream before returning: top_k with k above
// cuda::kTopKInsertionMaxK, whose sort scratch goes back to the device's
// memory cache on return, and top_k_grad, which checks the indices on the
// device and throws the CPU kernel's error for the first one out of range.
#include "ops/tensor/tensor_cuda.h"
#include "ops/tensor/top_k_cuda.h"
#include "ops/tensor/top_k_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

static_assert(cuda::kTopKInsertionMaxK == kTopKInsertionMaxK);

void TopKCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const TopKDims dims = TopKForwardDims(x, ctx.Attr<int>("k"));
  const int64_t rows = dims.rows;
  const int64_t c = dims.cols;
  const int64_t k = dims.k;
  Tensor* out = ctx.Output("Out");
  Tensor* indices = ctx.Output("Indices");
  const cudaStream_t stream = CudaStream::Current();
  VisitDataType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();  // before Out is allocated
    out->Allocate(DataTypeOf<T>(), dims.out_shape, ctx.place());
    indices->Allocate(DataType::kInt64, dims.out_shape, ctx.place());
    T* values = out->mutable_data<T>();
    int64_t* idx = indices->mutable_data<int64_t>();
    if (rows == 0) return;
    if (k <= kTopKInsertionMaxK) {
      cuda::TopKByInsertion(in, rows, c, k, values, idx, stream);
      CheckCuda(cudaGetLastError(), "top_k: kernel launch");
      return;
    }
    size_t bytes = 0;
    CheckCuda(cuda::TopKSortScratchBytes(rows, c, &bytes), "top_k: sort scratch size");
    Tensor scratch(DataType::kInt64, {static_cast<int64_t>((bytes + 7) / 8)}, ctx.place());
    CheckCuda(cuda::TopKBySort(in, rows, c, k, values, idx, scratch.mutable_data<int64_t>(), bytes,
                               stream),
              "top_k: sort");
    CudaStream::AtSynchronize([scratch] {});  // the scratch is freed once the sort has run
  });
}

// Throws the CPU kernel's error for the first index out of range, if any
// (`bad_position` from cuda::TopKGrad), once the stream has run the kernel:
// at its next Synchronize, so the host does not wait mid-step.
void CheckIndices(const Tensor& bad_position, const Tensor& indices, int64_t k, int64_t c) {
  CudaStream::AtSynchronize([bad_position, indices, k, c] {
    int64_t at = cuda::kNoBadPosition;
    CheckCuda(cudaMemcpy(&at, bad_position.data<int64_t>(), sizeof(at), cudaMemcpyDeviceToHost),
              "top_k_grad: index check copy");
    if (at == cuda::kNoBadPosition) return;
    int64_t i = 0;
    CheckCuda(cudaMemcpy(&i, indices.data<int64_t>() + at, sizeof(i), cudaMemcpyDeviceToHost),
              "top_k_grad: index copy");
    try {
      CheckTopKIndex(i, at / k, c);
    } catch (const Error& e) {
      throw Error(e.code(), StrCat("top_k_grad: ", e.what()));
    }
  });
}

// X@GRAD is zero except at the picked positions, which get Out@GRAD.
void TopKGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const TopKGradArgs a = ReadTopKGradArgs(ctx);
  VisitFloatType(a.dtype, [&]<class T>() {
    const T* dout = a.dout != nullptr ? a.dout->data<T>() : nullptr;
    a.dx->Allocate(DataTypeOf<T>(), a.shape, ctx.place());
    const cudaStream_t stream = CudaStream::Current();
    CheckCuda(cuda::Zero(a.dx->raw_data(), a.dx->bytes(), stream), "top_k_grad: cudaMemsetAsync");
    if (dout == nullptr) return;
    Tensor bad_position(DataType::kInt64, {1}, ctx.place());
    cuda::TopKGrad(a.idx, dout, a.dx->mutable_data<T>(), a.rows, a.cols, a.k,
                   bad_position.mutable_data<int64_t>(), stream);
    CheckCuda(cudaGetLastError(), "top_k_grad: kernel launch");
    CheckIndices(bad_position, a.indices, a.k, a.cols);
  });
}

}  // namespace

RILL_REGISTER_KERNEL(top_k, Cuda, TopKCudaKernel);
RILL_REGISTER_KERNEL(top_k_grad, Cuda, TopKGradCudaKernel);

}  // namespace rill
