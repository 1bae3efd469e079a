// CUDA kernels of concat, split, reshape and transpose and of their
// gradients (transpose's gradient is a transpose): the CPU kernels' checks
// made on the host by the code the CPU kernels run (shape_util.h,
// axis_layout.h), outputs allocated on the op's device, work queued on the
// stream the executor is launching on (CudaStream::Current()); device code
// in shape_cuda.cu. Every data type the CPU kernels take is taken here: they
// move elements as bytes.
#include <vector>

#include "ops/tensor/axis_layout.h"
#include "ops/tensor/shape_cuda.h"
#include "ops/tensor/shape_util.h"
#include "ops/tensor/tensor_cuda.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

static_assert(cuda::kMaxTransposeDims == kMaxTransposeRank);

// The device copies of the CPU's CopyPartIn and CopyPartOut (axis_layout.h),
// queued on the current stream; `what` names the op in errors.
void CopyPartInOnDevice(const AxisLayout& layout, int i, const void* part, void* joined,
                        const char* what) {
  const int64_t row = layout.part_rows[static_cast<size_t>(i)];
  if (row <= 0 || layout.outer <= 0) return;
  CheckCuda(cuda::CopyRows(static_cast<char*>(joined) + layout.part_offsets[static_cast<size_t>(i)],
                           layout.joined_row, part, row, row, layout.outer, CudaStream::Current()),
            what);
}

void CopyPartOutOnDevice(const AxisLayout& layout, int i, const void* joined, void* part,
                         const char* what) {
  const int64_t row = layout.part_rows[static_cast<size_t>(i)];
  if (row <= 0 || layout.outer <= 0) return;
  const char* src = joined == nullptr ? nullptr
                                      : static_cast<const char*>(joined) +
                                            layout.part_offsets[static_cast<size_t>(i)];
  CheckCuda(
      cuda::CopyRows(part, row, src, layout.joined_row, row, layout.outer, CudaStream::Current()),
      what);
}

void ConcatCudaKernel(KernelContext& ctx) {
  const AxisLayout layout = ConcatLayoutOf(ctx);
  Tensor* out = ctx.Output("Out");
  out->Allocate(layout.dtype, layout.joined_shape, ctx.place());
  for (int i = 0; i < layout.parts(); ++i) {
    if (layout.part_rows[static_cast<size_t>(i)] == 0) continue;  // X may hold no memory
    CopyPartInOnDevice(layout, i, ctx.Input("X", i).raw_data(), out->raw_data(), "concat: copy");
  }
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled; zeros if Out@GRAD is missing.
void ConcatGradCudaKernel(KernelContext& ctx) {
  const ConcatGrads grads = ReadConcatGrads(ctx);
  for (int i = 0; i < grads.layout.parts(); ++i) {
    if (grads.grad_index[static_cast<size_t>(i)] < 0) continue;
    Tensor* dx = ctx.Output(GradVarName("X"), grads.grad_index[static_cast<size_t>(i)]);
    dx->Allocate(grads.layout.dtype, grads.layout.part_shapes[static_cast<size_t>(i)], ctx.place());
    CopyPartOutOnDevice(grads.layout, i, grads.dout, dx->raw_data(), "concat_grad: copy");
  }
}

void SplitCudaKernel(KernelContext& ctx) {
  const AxisLayout layout = SplitLayoutOf(ctx);
  const void* x = ctx.Input("X").raw_data();
  for (int k = 0; k < layout.parts(); ++k) {
    Tensor* out = ctx.Output("Out", k);
    out->Allocate(layout.dtype, layout.part_shapes[static_cast<size_t>(k)], ctx.place());
    CopyPartOutOnDevice(layout, k, x, out->raw_data(), "split: copy");
  }
}

// X@GRAD = the Out gradients joined along the axis; a missing one reads as zeros.
void SplitGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const SplitGrads grads = ReadSplitGrads(ctx);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Allocate(grads.layout.dtype, grads.layout.joined_shape, ctx.place());
  for (int k = 0; k < grads.layout.parts(); ++k) {
    CopyPartInOnDevice(grads.layout, k, grads.dout[static_cast<size_t>(k)], dx->raw_data(),
                       "split_grad: copy");
  }
}

// As the CPU kernel: Out shares X's memory, whichever place holds it.
void ReshapeCudaKernel(KernelContext& ctx) { *ctx.Output("Out") = ReshapeView(ctx); }

// X@GRAD = Out@GRAD viewed with X's shape (sharing its memory); a missing
// Out@GRAD means zeros.
void ReshapeGradCudaKernel(KernelContext& ctx) {
  Tensor* zeros = ReshapeGradOrZeros(ctx, ctx.place());
  if (zeros == nullptr) return;
  CheckCuda(cuda::Zero(zeros->raw_data(), zeros->bytes(), CudaStream::Current()),
            "reshape_grad: cudaMemsetAsync");
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
