#include "ops/nn/softmax_util.h"

#include <algorithm>

namespace rill {
namespace {

// Checks Label against x at run time (declared shapes leave the batch
// unknown); the messages call x `x_name`.
LabeledInputs ReadLabeledInputs(const KernelContext& ctx, const char* x_slot, const char* x_name,
                                const char* x_possessive) {
  const Tensor& x = ctx.Input(x_slot);
  const Tensor& label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  const Shape& xs = x.shape();
  const Shape& ls = label.shape();
  bool ok = xs.size() >= 1 && ls.size() == xs.size() && ls.back() == (soft ? xs.back() : 1);
  for (size_t i = 0; ok && i + 1 < xs.size(); ++i) ok = xs[i] == ls[i];
  RILL_CHECK(ok, kInvalidArgument, "Label has shape ", ShapeToString(ls), " but ", x_name,
             " has shape ", ShapeToString(xs),
             (soft ? StrCat("; soft labels must match ", x_name)
                   : StrCat("; want ", x_possessive, " dims with a last dim of 1")));
  return {x, label, soft, DimProduct(xs, 0, x.rank() - 1), x.dim(x.rank() - 1)};
}

}  // namespace

const Tensor& SoftmaxInput(const KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  RILL_CHECK(x.rank() >= 1, kInvalidArgument, "softmax needs X of rank >= 1, got ", x.Describe());
  return x;
}

const Tensor& SoftmaxGradInput(const KernelContext& ctx) {
  const Tensor& y = ctx.Input("Out");
  RILL_CHECK(y.rank() >= 1, kInvalidArgument, "softmax_grad needs Out of rank >= 1, got ",
             y.Describe());
  return y;
}

std::string SoftmaxAxisError(int axis, int64_t rank) {
  if (axis >= -rank && axis < rank) return "";
  return StrCat("axis ", axis, " is outside [", -rank, ", ", rank, ") for rank ", rank);
}

int SoftmaxAxis(const KernelContext& ctx, int64_t rank) {
  const int axis = ctx.Attr<int>("axis");
  const std::string error = SoftmaxAxisError(axis, rank);
  RILL_CHECK(error.empty(), kInvalidArgument, error);
  return axis < 0 ? static_cast<int>(axis + rank) : axis;
}

SoftmaxRows MakeSoftmaxRows(const Shape& shape, int axis) {
  const int rank = static_cast<int>(shape.size());
  return {DimProduct(shape, 0, axis), shape[axis], DimProduct(shape, axis + 1, rank)};
}

std::string SoftmaxMaskShapeError(const Shape& mask, const Shape& x) {
  bool ok = mask.size() <= x.size();
  const size_t pad = x.size() - std::min(mask.size(), x.size());
  for (size_t j = 0; ok && j < mask.size(); ++j) {
    const int64_t m = mask[j];
    const int64_t d = x[pad + j];
    ok = m == 1 || m == d || m < 0 || d < 0;
  }
  if (ok) return "";
  return StrCat("Mask of shape ", ShapeToString(mask), " does not broadcast to X of shape ",
                ShapeToString(x),
                ": aligned to X's last dims, each of Mask's dims must be 1 or "
                "X's");
}

SoftmaxMaskIndex ReadSoftmaxMask(const Tensor& mask, const Tensor& x, int axis) {
  RILL_CHECK(mask.dtype() == x.dtype(), kInvalidArgument, "Mask is ", mask.Describe(), " but X is ",
             x.Describe(), ": want X's type");
  const std::string error = SoftmaxMaskShapeError(mask.shape(), x.shape());
  RILL_CHECK(error.empty(), kInvalidArgument, error);
  RILL_CHECK(x.rank() <= kSoftmaxMaxRank, kUnimplemented,
             "a masked softmax takes X of rank <= ", kSoftmaxMaxRank, ", X is ", x.Describe());
  SoftmaxMaskIndex index;
  index.rank = static_cast<int>(x.rank());
  const int64_t pad = x.rank() - mask.rank();
  int64_t stride = 1;
  for (int64_t d = x.rank() - 1; d >= 0; --d) {
    index.dims[d] = x.dim(d);
    const int64_t m = d < pad ? 1 : mask.dim(d - pad);
    index.strides[d] = m == 1 ? 0 : stride;
    stride *= m;
  }
  index.axis_stride = index.strides[axis];
  return index;
}

LabeledInputs ReadSoftmaxCrossEntropyInputs(const KernelContext& ctx, const char* x_slot) {
  return ReadLabeledInputs(ctx, x_slot, "Logits", "Logits'");
}

LabeledInputs ReadCrossEntropyInputs(const KernelContext& ctx) {
  return ReadLabeledInputs(ctx, "X", "X", "X's");
}

AccuracyInputs ReadAccuracyInputs(const KernelContext& ctx) {
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
  return {indices, label, rows, k};
}

}  // namespace rill
