// What the CPU kernels of softmax (softmax_op.cc), softmax_with_cross_entropy
// (softmax_with_cross_entropy_op.cc), cross_entropy (cross_entropy_op.cc) and
// accuracy (accuracy_op.cc) share with their CUDA kernels
// (softmax_op_cuda.cc): the inputs read and checked in the same order with the
// same messages on every place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/math/vector_math.h"
#include "ops/nn/softmax_axis.h"
#include "rill/kernel_context.h"

namespace rill {

// softmax's X; throws kInvalidArgument unless its rank is >= 1.
const Tensor& SoftmaxInput(const KernelContext& ctx);
// softmax_grad's Out; throws kInvalidArgument unless its rank is >= 1.
const Tensor& SoftmaxGradInput(const KernelContext& ctx);

// The `axis` attribute of softmax (softmax_grad) for X (Out) of rank `rank`,
// counted from the front; negative axes count from the end. Throws
// kInvalidArgument unless it is in [-rank, rank).
int SoftmaxAxis(const KernelContext& ctx, int64_t rank);
// The same check for shape inference: "" when `axis` is in [-rank, rank),
// else the error.
std::string SoftmaxAxisError(int axis, int64_t rank);

// `shape` seen as rows along `axis` (non-negative, in range).
SoftmaxRows MakeSoftmaxRows(const Shape& shape, int axis);

// "" when Mask's shape broadcasts to X's (Mask's dims, aligned to X's last
// dims, are each 1 or X's; -1 is unknown and matches), else the error.
std::string SoftmaxMaskShapeError(const Shape& mask, const Shape& x);
// softmax's Mask (call only when it is bound): checks it has X's type and
// broadcasts to X (rank at most kSoftmaxMaxRank), then returns where each of
// X's elements finds its mask value.
SoftmaxMaskIndex ReadSoftmaxMask(const Tensor& mask, const Tensor& x, int axis);

// softmax_grad's Out@GRAD (call only when it is ready) as T; throws
// kInvalidArgument unless it has the shape of Out (`y`).
template <class T>
const T* SoftmaxOutGrad(const KernelContext& ctx, const Tensor& y) {
  const Tensor& dy = ctx.Input("Out@GRAD");
  RILL_CHECK(dy.shape() == y.shape(), kInvalidArgument, "Out@GRAD has shape ",
             ShapeToString(dy.shape()), " but Out has shape ", ShapeToString(y.shape()));
  return dy.data<T>();
}

// The inputs of softmax_with_cross_entropy and cross_entropy (and their
// gradients): x holds rows of cols classes (its last dim), Label a class index
// per row (hard, int64 [..., 1]) or a distribution over the classes (soft,
// x's shape).
struct LabeledInputs {
  const Tensor& x;
  const Tensor& label;
  bool soft;     // the soft_label attribute
  int64_t rows;  // the product of x's dims but the last
  int64_t cols;  // x's last dim
};
// Reads `x_slot` (Logits, or Softmax for the gradient), Label and soft_label;
// throws kInvalidArgument, naming x Logits, unless Label's shape fits x's.
LabeledInputs ReadSoftmaxCrossEntropyInputs(const KernelContext& ctx, const char* x_slot);
// The same for cross_entropy's X, named X.
LabeledInputs ReadCrossEntropyInputs(const KernelContext& ctx);

// Throws kInvalidArgument unless row r's hard label l is in [0, cols).
inline void CheckHardLabel(int64_t r, int64_t l, int64_t cols) {
  RILL_CHECK(l >= 0 && l < cols, kInvalidArgument, "Label of row ", r, " is ", l, ", outside [0, ",
             cols, ")");
}

// The gradient `slot` of a loss with one value per row (Loss@GRAD, Y@GRAD;
// call only when it is ready) as T; throws kInvalidArgument unless it holds
// `rows` values.
template <class T>
const T* RowLossGrad(const KernelContext& ctx, const char* slot, int64_t rows) {
  const Tensor& d = ctx.Input(slot);
  RILL_CHECK(d.numel() == rows, kInvalidArgument, slot, " has shape ", ShapeToString(d.shape()),
             ", want one value for each of the ", rows, " rows");
  return d.data<T>();
}

// accuracy's inputs: Indices [rows, k] of the top-k classes and Label [rows, 1]
// (or [rows]) int64 (Out, the top-k values, is checked for its shape only).
struct AccuracyInputs {
  const Tensor& indices;
  const Tensor& label;
  int64_t rows;
  int64_t k;
};
// Reads them; throws kInvalidArgument unless Indices is [N, k], Out has its
// shape and Label is [N, 1] or [N].
AccuracyInputs ReadAccuracyInputs(const KernelContext& ctx);

// One CPU row of `cols` (>= 1) contiguous values: yr = softmax(xr), from xr -
// max so large values do not overflow, exp from vector_math.h. Returns the
// max and the sum of the exponentials (log-sum-exp = max + log(sum)). yr may
// be xr. softmax's unmasked last-axis rows and softmax_with_cross_entropy's
// rows both go through it: the same bits.
template <class T>
struct SoftmaxRowSums {
  T max;
  T sum;
};

template <class T>
SoftmaxRowSums<T> SoftmaxOfRow(const T* xr, T* yr, int64_t cols) {
  T max = xr[0];
  for (int64_t j = 1; j < cols; ++j) max = std::max(max, xr[j]);
  for (int64_t j = 0; j < cols; ++j) yr[j] = xr[j] - max;
  VectorExp(yr, yr, cols);
  T sum = 0;
  for (int64_t j = 0; j < cols; ++j) sum += yr[j];
  const T inv = T(1) / sum;
  for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
  return {max, sum};
}

}  // namespace rill
