// CUDA kernels of softmax, softmax_with_cross_entropy, cross_entropy (and
// their gradients) and accuracy: the CPU kernels' checks made on the host (the
// inputs read and checked by softmax_util.h, as the CPU kernels read them),
// outputs allocated on the op's device, work launched on the stream the
// executor is launching on (CudaStream::Current()); device code in
// softmax_cuda.cu.
//
// Hard labels are checked on the device: the kernels record the first row
// whose label is outside [0, C), and the glue reads that back when the stream
// is synchronized (the iteration's end, not a wait mid-step) and throws the
// CPU kernels' error for it, naming the op. Unlike on the CPU, where the
// iteration stops at the op, the rest of that iteration has run by then, with
// zero loss and zero gradient from the bad rows (never uninitialized memory).
#include "ops/nn/softmax_axis_cuda.h"
#include "ops/nn/softmax_cuda.h"
#include "ops/nn/softmax_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// A device int64 for the launchers' bad_row (hard labels only).
class BadLabelRow {
 public:
  BadLabelRow(bool hard, Place place) {
    if (hard) flag_.Allocate(DataType::kInt64, {1}, place);
  }
  int64_t* get() { return flag_.initialized() ? flag_.mutable_data<int64_t>() : nullptr; }

  // Throws the CPU kernels' error for the first row whose label was out of
  // range, if any, once the stream has run the kernel: at its next
  // Synchronize (CudaStream::AtSynchronize), so the host does not wait here.
  void Check(const Tensor& label, int64_t cols, const char* op) {
    if (!flag_.initialized()) return;
    CudaStream::AtSynchronize([flag = flag_, label, cols, op] {
      int64_t row = cuda::kNoBadLabelRow;
      CheckCuda(cudaMemcpy(&row, flag.data<int64_t>(), sizeof(row), cudaMemcpyDeviceToHost),
                StrCat(op, ": label check copy"));
      if (row == cuda::kNoBadLabelRow) return;
      int64_t l = 0;
      CheckCuda(cudaMemcpy(&l, label.data<int64_t>() + row, sizeof(l), cudaMemcpyDeviceToHost),
                StrCat(op, ": label copy"));
      try {
        CheckHardLabel(row, l, cols);
      } catch (const Error& e) {
        throw Error(e.code(), StrCat(op, ": ", e.what()));
      }
    });
  }

 private:
  Tensor flag_;
};

// The last axis unmasked runs softmax_cuda.h's row kernel, as before axes
// and masks; the rest softmax_axis_cuda.h's.
void SoftmaxCudaKernel(KernelContext& ctx) {
  const Tensor& x = SoftmaxInput(ctx);
  const int axis = SoftmaxAxis(ctx, x.rank());
  const bool masked = ctx.HasInput("Mask");
  const Tensor* mask = masked ? &ctx.Input("Mask") : nullptr;
  const SoftmaxMaskIndex mask_index = masked ? ReadSoftmaxMask(*mask, x, axis) : SoftmaxMaskIndex();
  const SoftmaxRows rows = MakeSoftmaxRows(x.shape(), axis);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    // X's pointer and shape are taken before Out is allocated (Out may be X).
    const T* in = x.data<T>();
    const T* m = masked ? mask->data<T>() : nullptr;
    const Shape shape = x.shape();
    out->Allocate(DataTypeOf<T>(), shape, ctx.place());
    if (!masked && rows.inner == 1) {
      cuda::Softmax(in, out->mutable_data<T>(), rows.len == 0 ? 0 : rows.outer, rows.len,
                    CudaStream::Current());
    } else {
      cuda::SoftmaxAxis(in, out->mutable_data<T>(), rows, m, mask_index, CudaStream::Current());
    }
  });
  CheckCuda(cudaGetLastError(), "softmax: kernel launch");
}

void SoftmaxGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = SoftmaxGradInput(ctx);
  const int axis = SoftmaxAxis(ctx, y.rank());
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(y.dtype(), [&]<class T>() {
    const T* out = y.data<T>();
    const Shape shape = y.shape();
    const SoftmaxRows rows = MakeSoftmaxRows(shape, axis);
    const T* dy = has_dy ? SoftmaxOutGrad<T>(ctx, y) : nullptr;
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    if (dy != nullptr && rows.inner != 1) {
      cuda::SoftmaxAxisGrad(out, dy, dx->mutable_data<T>(), rows, CudaStream::Current());
    } else {
      // Rows of the last axis; rows * cols is the element count (0 when cols
      // is), and without Out@GRAD every element is 0 whatever the axis.
      const int64_t cols = y.dim(y.rank() - 1);
      const int64_t row_count = cols == 0 ? 0 : y.numel() / cols;
      cuda::SoftmaxGrad(out, dy, dx->mutable_data<T>(), row_count, cols, CudaStream::Current());
    }
  });
  CheckCuda(cudaGetLastError(), "softmax_grad: kernel launch");
}

void SoftmaxWithCrossEntropyCudaKernel(KernelContext& ctx) {
  const LabeledInputs args = ReadSoftmaxCrossEntropyInputs(ctx, "Logits");
  const bool soft = args.soft;
  Tensor* softmax = ctx.Output("Softmax");
  Tensor* loss = ctx.Output("Loss");
  BadLabelRow bad(!soft, ctx.place());
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* in = args.x.data<T>();
    const Shape shape = args.x.shape();
    const T* soft_label = soft ? args.label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : args.label.data<int64_t>();
    Shape loss_shape = shape;
    loss_shape.back() = 1;
    softmax->Allocate(DataTypeOf<T>(), shape, ctx.place());
    loss->Allocate(DataTypeOf<T>(), loss_shape, ctx.place());
    cuda::SoftmaxWithCrossEntropy(in, soft_label, hard_label, softmax->mutable_data<T>(),
                                  loss->mutable_data<T>(), args.rows, args.cols, bad.get(),
                                  CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "softmax_with_cross_entropy: kernel launch");
  bad.Check(args.label, args.cols, "softmax_with_cross_entropy");
}

void SoftmaxWithCrossEntropyGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("Logits@GRAD")) return;
  const LabeledInputs args = ReadSoftmaxCrossEntropyInputs(ctx, "Softmax");
  const bool soft = args.soft;
  const bool has_dloss = ctx.InputReady("Loss@GRAD");
  Tensor* dx = ctx.Output("Logits@GRAD");
  // Labels are read (and checked) only when Loss@GRAD is there, as on the CPU.
  BadLabelRow bad(!soft && has_dloss, ctx.place());
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* sm = args.x.data<T>();
    const Shape shape = args.x.shape();
    const T* dloss = has_dloss ? RowLossGrad<T>(ctx, "Loss@GRAD", args.rows) : nullptr;
    const T* soft_label = soft ? args.label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : args.label.data<int64_t>();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::SoftmaxWithCrossEntropyGrad(sm, soft_label, hard_label, dloss, dx->mutable_data<T>(),
                                      args.rows, args.cols, bad.get(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "softmax_with_cross_entropy_grad: kernel launch");
  bad.Check(args.label, args.cols, "softmax_with_cross_entropy_grad");
}

void CrossEntropyCudaKernel(KernelContext& ctx) {
  const LabeledInputs args = ReadCrossEntropyInputs(ctx);
  const bool soft = args.soft;
  Tensor* y = ctx.Output("Y");
  BadLabelRow bad(!soft, ctx.place());
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* in = args.x.data<T>();
    Shape y_shape = args.x.shape();
    y_shape.back() = 1;
    const T* soft_label = soft ? args.label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : args.label.data<int64_t>();
    y->Allocate(DataTypeOf<T>(), y_shape, ctx.place());
    cuda::CrossEntropy(in, soft_label, hard_label, y->mutable_data<T>(), args.rows, args.cols,
                       bad.get(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "cross_entropy: kernel launch");
  bad.Check(args.label, args.cols, "cross_entropy");
}

void CrossEntropyGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const LabeledInputs args = ReadCrossEntropyInputs(ctx);
  const bool soft = args.soft;
  const bool has_dy = ctx.InputReady("Y@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  // Labels are read (and checked) only when Y@GRAD is there, as on the CPU.
  BadLabelRow bad(!soft && has_dy, ctx.place());
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    const T* in = args.x.data<T>();
    const Shape shape = args.x.shape();
    const T* dy = has_dy ? RowLossGrad<T>(ctx, "Y@GRAD", args.rows) : nullptr;
    const T* soft_label = soft ? args.label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : args.label.data<int64_t>();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::CrossEntropyGrad(in, soft_label, hard_label, dy, dx->mutable_data<T>(), args.rows,
                           args.cols, bad.get(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "cross_entropy_grad: kernel launch");
  bad.Check(args.label, args.cols, "cross_entropy_grad");
}

void AccuracyCudaKernel(KernelContext& ctx) {
  const AccuracyInputs args = ReadAccuracyInputs(ctx);
  const int64_t* idx = args.indices.data<int64_t>();
  const int64_t* lab = args.label.data<int64_t>();
  Tensor* acc = ctx.Output("Accuracy");
  acc->Allocate(DataType::kFloat32, {1}, ctx.place());
  int64_t* correct = nullptr;
  int64_t* total = nullptr;
  if (ctx.HasOutput("Correct")) {
    Tensor* t = ctx.Output("Correct");
    t->Allocate(DataType::kInt64, {1}, ctx.place());
    correct = t->mutable_data<int64_t>();
  }
  if (ctx.HasOutput("Total")) {
    Tensor* t = ctx.Output("Total");
    t->Allocate(DataType::kInt64, {1}, ctx.place());
    total = t->mutable_data<int64_t>();
  }
  cuda::Accuracy(idx, lab, args.rows, args.k, acc->mutable_data<float>(), correct, total,
                 CudaStream::Current());
  CheckCuda(cudaGetLastError(), "accuracy: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(softmax, Cuda, SoftmaxCudaKernel);
RILL_REGISTER_KERNEL(softmax_grad, Cuda, SoftmaxGradCudaKernel);
RILL_REGISTER_KERNEL(softmax_with_cross_entropy, Cuda, SoftmaxWithCrossEntropyCudaKernel);
RILL_REGISTER_KERNEL(softmax_with_cross_entropy_grad, Cuda, SoftmaxWithCrossEntropyGradCudaKernel);
RILL_REGISTER_KERNEL(cross_entropy, Cuda, CrossEntropyCudaKernel);
RILL_REGISTER_KERNEL(cross_entropy_grad, Cuda, CrossEntropyGradCudaKernel);
RILL_REGISTER_KERNEL(accuracy, Cuda, AccuracyCudaKernel);

}  // namespace rill
