// CUDA kernels of concat, split, reshape and transpose and of their
// gradients (transpose's gradient is a transpose): the CPU kernels' checks
// made on the host (through shape_util.h where they share code), outputs
// allocated on the op's device, work queued on the stream the executor is
// launching on (CudaStream::Current()); device code in shape_cuda.cu. Every
// data type the CPU kernels take is taken here: they move elements as bytes.
#include <vector>

#include "ops/tensor/shape_cuda.h"
#include "ops/tensor/shape_util.h"
#include "ops/tensor/tensor_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

static_assert(cuda::kMaxTransposeDims == kMaxTransposeRank);

void ConcatCudaKernel(KernelContext& ctx) {
  const int n = ctx.InputCount("X");
  RILL_CHECK(n >= 1, kInvalidArgument, "concat needs at least one input");
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const int axis = ConcatAxis(ctx.Attr<int>("axis"), rank);
  const DataType dtype = first.dtype();
  const int64_t elem = static_cast<int64_t>(SizeOf(dtype));
  const Shape out_shape = ConcatOutShape(ctx, axis);
  const int64_t outer = DimProduct(out_shape, 0, axis);
  const int64_t out_row = DimProduct(out_shape, axis, rank) * elem;
  Tensor* out = ctx.Output("Out");
  out->Allocate(dtype, out_shape, ctx.place());
  char* dst = static_cast<char*>(out->raw_data());
  int64_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    const int64_t row = DimProduct(x.shape(), axis, rank) * elem;
    if (row == 0) continue;
    CheckCuda(
        cuda::CopyRows(dst + offset, out_row, x.raw_data(), row, row, outer, CudaStream::Current()),
        "concat: copy");
    offset += row;
  }
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled; zeros if Out@GRAD is missing.
void ConcatGradCudaKernel(KernelContext& ctx) {
  const int n = ctx.InputCount("X");
  ConcatGradMatcher matcher(ctx.op(), n);
  if (!matcher.any()) return;
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const int axis = ConcatAxis(ctx.Attr<int>("axis"), rank);
  const DataType dtype = first.dtype();
  const int64_t elem = static_cast<int64_t>(SizeOf(dtype));
  const int64_t outer = DimProduct(first.shape(), 0, axis);
  int64_t out_row = 0;
  for (int i = 0; i < n; ++i) out_row += DimProduct(ctx.Input("X", i).shape(), axis, rank) * elem;
  const char* dout = nullptr;
  if (ctx.InputReady("Out@GRAD")) {
    const Tensor& g = ctx.Input("Out@GRAD");
    RILL_CHECK(g.dtype() == dtype && g.numel() * elem == out_row * outer, kInvalidArgument,
               "Out@GRAD ", g.Describe(), " does not match the inputs");
    dout = static_cast<const char*>(g.raw_data());
  }
  int64_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    const int64_t row = DimProduct(x.shape(), axis, rank) * elem;
    const int g = matcher.Next(i, ctx.InputName("X", i));
    if (g >= 0) {
      const Shape shape = x.shape();  // X@GRAD is never X, but copy before allocating anyway
      Tensor* dx = ctx.Output(GradVarName("X"), g);
      dx->Allocate(dtype, shape, ctx.place());
      // No Out@GRAD: CopyRows writes zeros.
      CheckCuda(cuda::CopyRows(dx->raw_data(), row, dout == nullptr ? nullptr : dout + offset,
                               out_row, row, outer, CudaStream::Current()),
                "concat_grad: copy");
    }
    offset += row;
  }
}

void SplitCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int rank = x.rank();
  const int axis = SplitAxis(ctx.Attr<int>("axis"), rank);
  const int outputs = ctx.OutputCount("Out");
  const std::vector<int64_t> sizes = SplitPartSizes(
      x.dim(axis), ctx.Attr<int>("num"), ctx.Attr<std::vector<int64_t>>("sections"), outputs);
  const DataType dtype = x.dtype();
  const int64_t elem = static_cast<int64_t>(SizeOf(dtype));
  const int64_t outer = DimProduct(x.shape(), 0, axis);
  const int64_t inner = DimProduct(x.shape(), axis + 1, rank) * elem;
  const int64_t x_row = x.dim(axis) * inner;
  const char* src = static_cast<const char*>(x.raw_data());
  Shape shape = x.shape();
  int64_t offset = 0;
  for (int k = 0; k < outputs; ++k) {
    shape[axis] = sizes[static_cast<size_t>(k)];
    const int64_t row = shape[axis] * inner;
    Tensor* out = ctx.Output("Out", k);
    out->Allocate(dtype, shape, ctx.place());
    CheckCuda(cuda::CopyRows(out->raw_data(), row, src + offset, x_row, row, outer,
                             CudaStream::Current()),
              "split: copy");
    offset += row;
  }
}

// X@GRAD = the Out gradients joined along the axis; a missing one reads as zeros.
void SplitGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const int rank = x.rank();
  const int axis = SplitAxis(ctx.Attr<int>("axis"), rank);
  const int parts = ctx.InputCount("Out");
  RILL_CHECK(parts >= 1, kInvalidArgument, "split_grad needs the forward Out variables");
  const std::vector<int64_t> sizes = SplitPartSizes(
      x.dim(axis), ctx.Attr<int>("num"), ctx.Attr<std::vector<int64_t>>("sections"), parts);
  const DataType dtype = x.dtype();
  const Shape shape = x.shape();
  const int64_t elem = static_cast<int64_t>(SizeOf(dtype));
  const int64_t outer = DimProduct(shape, 0, axis);
  const int64_t inner = DimProduct(shape, axis + 1, rank) * elem;
  const int64_t x_row = shape[axis] * inner;
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Allocate(dtype, shape, ctx.place());
  char* dst = static_cast<char*>(dx->raw_data());
  SplitGradMatcher matcher(ctx);
  int64_t offset = 0;
  for (int k = 0; k < parts; ++k) {
    const int64_t row = sizes[static_cast<size_t>(k)] * inner;
    const int g = matcher.Next(k);
    const void* src = nullptr;  // CopyRows writes zeros
    if (g >= 0 && ctx.InputReady("Out@GRAD", g)) {
      const Tensor& dout = ctx.Input("Out@GRAD", g);
      RILL_CHECK(dout.dtype() == dtype && dout.numel() * elem == row * outer, kInvalidArgument,
                 "Out@GRAD[", g, "] ", dout.Describe(), " does not match part ", k, " of X ",
                 x.Describe());
      src = dout.raw_data();
    }
    CheckCuda(cuda::CopyRows(dst + offset, x_row, src, row, row, outer, CudaStream::Current()),
              "split_grad: copy");
    offset += row;
  }
}

// As the CPU kernel: Out shares X's memory, whichever place holds it.
void ReshapeCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Shape shape = ResolveReshape(x.shape(), ctx.Attr<std::vector<int64_t>>("shape"));
  *ctx.Output("Out") = x.Reshaped(shape);
}

// X@GRAD = Out@GRAD viewed with X's shape (sharing its memory); a missing
// Out@GRAD means zeros.
void ReshapeGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const Shape shape = x.shape();
  const DataType dtype = x.dtype();
  Tensor* dx = ctx.Output("X@GRAD");
  if (!ctx.InputReady("Out@GRAD")) {
    dx->Allocate(dtype, shape, ctx.place());
    CheckCuda(cuda::Zero(dx->raw_data(), dx->bytes(), CudaStream::Current()),
              "reshape_grad: cudaMemsetAsync");
    return;
  }
  const Tensor& dout = ctx.Input("Out@GRAD");
  RILL_CHECK(dout.numel() == NumElements(shape) && dout.dtype() == dtype, kInvalidArgument,
             "Out@GRAD ", dout.Describe(), " does not match X ", x.Describe());
  *dx = dout.Reshaped(shape);
}

void TransposeCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const std::vector<int64_t> perm = ctx.Attr<std::vector<int64_t>>("axis");
  CheckPermutation(perm, static_cast<size_t>(x.rank()));
  // X's pointer and shape are taken before Out is allocated.
  const Shape in_shape = x.shape();
  const DataType dtype = x.dtype();
  const void* in = x.raw_data();
  Shape out_shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out_shape[i] = in_shape[static_cast<size_t>(perm[i])];
  Tensor* out = ctx.Output("Out");
  out->Allocate(dtype, out_shape, ctx.place());
  CheckCuda(cuda::Transpose(in, out->raw_data(), in_shape.data(), perm.data(),
                            static_cast<int>(in_shape.size()), static_cast<int>(SizeOf(dtype)),
                            CudaStream::Current()),
            "transpose: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(concat, Cuda, ConcatCudaKernel);
RILL_REGISTER_KERNEL(concat_grad, Cuda, ConcatGradCudaKernel);
RILL_REGISTER_KERNEL(split, Cuda, SplitCudaKernel);
RILL_REGISTER_KERNEL(split_grad, Cuda, SplitGradCudaKernel);
RILL_REGISTER_KERNEL(reshape, Cuda, ReshapeCudaKernel);
RILL_REGISTER_KERNEL(reshape_grad, Cuda, ReshapeGradCudaKernel);
RILL_REGISTER_KERNEL(transpose, Cuda, TransposeCudaKernel);

}  // namespace rill
