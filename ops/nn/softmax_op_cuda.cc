// CUDA kernels of softmax, softmax_with_cross_entropy, cross_entropy (and
// their gradients) and accuracy: the CPU kernels' checks made on the host,
// outputs allocated on the op's device, work launched on the stream the
// executor is launching on (CudaStream::Current()); device code in
// softmax_cuda.cu.
//
// Hard labels are checked on the device: the kernels record the first row
// whose label is outside [0, C), and the glue copies that back (a wait on the
// stream) and throws the CPU kernels' error for it.
#include "ops/nn/softmax_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// As the CPU kernels' CheckLabelShape (softmax_with_cross_entropy_op.cc names
// the input "Logits" and cross_entropy_op.cc "X"; their messages word by word).
void CheckLabelShape(const Tensor& x, const Tensor& label, bool soft, const char* x_name,
                     const char* x_possessive) {
  const Shape& xs = x.shape();
  const Shape& ls = label.shape();
  bool ok = xs.size() >= 1 && ls.size() == xs.size() && ls.back() == (soft ? xs.back() : 1);
  for (size_t i = 0; ok && i + 1 < xs.size(); ++i) ok = xs[i] == ls[i];
  RILL_CHECK(ok, kInvalidArgument, "Label has shape ", ShapeToString(ls), " but ", x_name,
             " has shape ", ShapeToString(xs),
             (soft ? StrCat("; soft labels must match ", x_name)
                   : StrCat("; want ", x_possessive, " dims with a last dim of 1")));
}

// A device int64 for the launchers' bad_row (hard labels only).
class BadLabelRow {
 public:
  BadLabelRow(bool hard, Place place) {
    if (hard) flag_.Allocate(DataType::kInt64, {1}, place);
  }
  int64_t* get() { return flag_.initialized() ? flag_.mutable_data<int64_t>() : nullptr; }

  // Waits for the stream, then throws the CPU kernels' error for the first
  // row whose label was out of range, if any.
  void Check(const Tensor& label, int64_t cols, const char* op) {
    if (!flag_.initialized()) return;
    const cudaStream_t stream = CudaStream::Current();
    int64_t row = cuda::kNoBadLabelRow;
    CheckCuda(
        cudaMemcpyAsync(&row, flag_.data<int64_t>(), sizeof(row), cudaMemcpyDeviceToHost, stream),
        StrCat(op, ": label check copy"));
    CheckCuda(cudaStreamSynchronize(stream), StrCat(op, ": label check"));
    if (row == cuda::kNoBadLabelRow) return;
    int64_t l = 0;
    CheckCuda(cudaMemcpy(&l, label.data<int64_t>() + row, sizeof(l), cudaMemcpyDeviceToHost),
              StrCat(op, ": label copy"));
    RILL_CHECK(l >= 0 && l < cols, kInvalidArgument, "Label of row ", row, " is ", l,
               ", outside [0, ", cols, ")");
  }

 private:
  Tensor flag_;
};

void SoftmaxCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  RILL_CHECK(x.rank() >= 1, kInvalidArgument, "softmax needs X of rank >= 1, got ", x.Describe());
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    // X's pointer and shape are taken before Out is allocated (Out may be X).
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t cols = x.dim(x.rank() - 1);
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    out->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::Softmax(in, out->mutable_data<T>(), rows, cols, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "softmax: kernel launch");
}

void SoftmaxGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = ctx.Input("Out");
  RILL_CHECK(y.rank() >= 1, kInvalidArgument, "softmax_grad needs Out of rank >= 1, got ",
             y.Describe());
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(y.dtype(), [&]<class T>() {
    const T* out = y.data<T>();
    const Shape shape = y.shape();
    const int64_t cols = y.dim(y.rank() - 1);
    const int64_t rows = cols == 0 ? 0 : y.numel() / cols;
    const T* dy = nullptr;
    if (has_dy) {
      const Tensor& dy_t = ctx.Input("Out@GRAD");
      RILL_CHECK(dy_t.shape() == y.shape(), kInvalidArgument, "Out@GRAD has shape ",
                 ShapeToString(dy_t.shape()), " but Out has shape ", ShapeToString(y.shape()));
      dy = dy_t.data<T>();
    }
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    // rows * cols is the element count (0 when cols is); no Out@GRAD: zeros.
    cuda::SoftmaxGrad(out, dy, dx->mutable_data<T>(), rows, cols, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "softmax_grad: kernel launch");
}

void SoftmaxWithCrossEntropyCudaKernel(KernelContext& ctx) {
  const Tensor& logits = ctx.Input("Logits");
  const Tensor& label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  CheckLabelShape(logits, label, soft, "Logits", "Logits'");
  Tensor* softmax = ctx.Output("Softmax");
  Tensor* loss = ctx.Output("Loss");
  BadLabelRow bad(!soft, ctx.place());
  int64_t cols = 0;
  VisitFloatType(logits.dtype(), [&]<class T>() {
    const T* in = logits.data<T>();
    const Shape shape = logits.shape();
    cols = logits.dim(logits.rank() - 1);
    const int64_t rows = DimProduct(shape, 0, logits.rank() - 1);
    const T* soft_label = soft ? label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : label.data<int64_t>();
    Shape loss_shape = shape;
    loss_shape.back() = 1;
    softmax->Allocate(DataTypeOf<T>(), shape, ctx.place());
    loss->Allocate(DataTypeOf<T>(), loss_shape, ctx.place());
    cuda::SoftmaxWithCrossEntropy(in, soft_label, hard_label, softmax->mutable_data<T>(),
                                  loss->mutable_data<T>(), rows, cols, bad.get(),
                                  CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "softmax_with_cross_entropy: kernel launch");
  bad.Check(label, cols, "softmax_with_cross_entropy");
}

void SoftmaxWithCrossEntropyGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("Logits@GRAD")) return;
  const Tensor& softmax = ctx.Input("Softmax");
  const Tensor& label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  CheckLabelShape(softmax, label, soft, "Logits", "Logits'");
  const bool has_dloss = ctx.InputReady("Loss@GRAD");
  Tensor* dx = ctx.Output("Logits@GRAD");
  // Labels are read (and checked) only when Loss@GRAD is there, as on the CPU.
  BadLabelRow bad(!soft && has_dloss, ctx.place());
  int64_t cols = 0;
  VisitFloatType(softmax.dtype(), [&]<class T>() {
    const T* sm = softmax.data<T>();
    const Shape shape = softmax.shape();
    cols = softmax.dim(softmax.rank() - 1);
    const int64_t rows = DimProduct(shape, 0, softmax.rank() - 1);
    const T* dloss = nullptr;
    if (has_dloss) {
      const Tensor& dloss_t = ctx.Input("Loss@GRAD");
      RILL_CHECK(dloss_t.numel() == rows, kInvalidArgument, "Loss@GRAD has shape ",
                 ShapeToString(dloss_t.shape()), ", want one value for each of the ", rows,
                 " rows");
      dloss = dloss_t.data<T>();
    }
    const T* soft_label = soft ? label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : label.data<int64_t>();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::SoftmaxWithCrossEntropyGrad(sm, soft_label, hard_label, dloss, dx->mutable_data<T>(),
                                      rows, cols, bad.get(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "softmax_with_cross_entropy_grad: kernel launch");
  bad.Check(label, cols, "softmax_with_cross_entropy_grad");
}

void CrossEntropyCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  CheckLabelShape(x, label, soft, "X", "X's");
  Tensor* y = ctx.Output("Y");
  BadLabelRow bad(!soft, ctx.place());
  int64_t cols = 0;
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    cols = x.dim(x.rank() - 1);
    const int64_t rows = DimProduct(x.shape(), 0, x.rank() - 1);
    Shape y_shape = x.shape();
    y_shape.back() = 1;
    const T* soft_label = soft ? label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : label.data<int64_t>();
    y->Allocate(DataTypeOf<T>(), y_shape, ctx.place());
    cuda::CrossEntropy(in, soft_label, hard_label, y->mutable_data<T>(), rows, cols, bad.get(),
                       CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "cross_entropy: kernel launch");
  bad.Check(label, cols, "cross_entropy");
}

void CrossEntropyGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  CheckLabelShape(x, label, soft, "X", "X's");
  const bool has_dy = ctx.InputReady("Y@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  // Labels are read (and checked) only when Y@GRAD is there, as on the CPU.
  BadLabelRow bad(!soft && has_dy, ctx.place());
  int64_t cols = 0;
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    cols = x.dim(x.rank() - 1);
    const int64_t rows = DimProduct(shape, 0, x.rank() - 1);
    const T* dy = nullptr;
    if (has_dy) {
      const Tensor& dy_t = ctx.Input("Y@GRAD");
      RILL_CHECK(dy_t.numel() == rows, kInvalidArgument, "Y@GRAD has shape ",
                 ShapeToString(dy_t.shape()), ", want one value for each of the ", rows, " rows");
      dy = dy_t.data<T>();
    }
    const T* soft_label = soft ? label.data<T>() : nullptr;
    const int64_t* hard_label = soft ? nullptr : label.data<int64_t>();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::CrossEntropyGrad(in, soft_label, hard_label, dy, dx->mutable_data<T>(), rows, cols,
                           bad.get(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "cross_entropy_grad: kernel launch");
  bad.Check(label, cols, "cross_entropy_grad");
}

void AccuracyCudaKernel(KernelContext& ctx) {
  const Tensor& out = ctx.Input("Out");
  const Tensor& indices = ctx.Input("Indices");
  const Tensor& label = ctx.Input("Label");
  RILL_CHECK(indices.rank() == 2, kInvalidArgument, "Indices must be [N, k], is ",
             indices.Describe());
  RILL_CHECK(out.shape() == indices.shape(), kInvalidArgument, "Out has shape ",
             ShapeToString(out.shape()), " but Indices has shape ", ShapeToString(indices.shape()));
  const int64_t rows = indices.dim(0);
  const int64_t k = indices.dim(1);
  const bool label_ok =
      (label.rank() == 1 || (label.rank() == 2 && label.dim(1) == 1)) && label.dim(0) == rows;
  RILL_CHECK(label_ok, kInvalidArgument, "Label has shape ", ShapeToString(label.shape()),
             ", want [", rows, ", 1] to match Indices ", ShapeToString(indices.shape()));
  const int64_t* idx = indices.data<int64_t>();
  const int64_t* lab = label.data<int64_t>();
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
  cuda::Accuracy(idx, lab, rows, k, acc->mutable_data<float>(), correct, total,
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
