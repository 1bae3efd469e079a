// What the CPU kernels of concat, split, reshape and transpose and their CUDA
// kernels (shape_op_cuda.cc) share: the attributes resolved against the
// input's shape, reshape's views, and which gradient variable belongs to
// which forward one.
#pragma once

#include <string>
#include <vector>

#include "rill/kernel_context.h"

namespace rill {

// The most dims transpose takes (the CPU and CUDA kernels keep them in arrays).
inline constexpr int kMaxTransposeRank = 16;

// concat's and split's `axis`, in [-rank, rank), as an index in [0, rank).
// Throw kInvalidArgument for rank 0 or an axis out of range.
int ConcatAxis(int axis, int rank);
int SplitAxis(int axis, int rank);

// The shape of concat's Out: the X inputs (at least one) joined along
// `axis`. Throws kInvalidArgument when one differs from X[0] in rank, type,
// or a dim other than the axis.
Shape ConcatOutShape(const KernelContext& ctx, int axis);

// Throws kInvalidArgument unless `perm` is a permutation of 0..rank-1, and
// kUnimplemented for a rank above kMaxTransposeRank.
void CheckPermutation(const std::vector<int64_t>& perm, size_t rank);

// reshape's `shape` attribute resolved against X's shape: 0 copies X's dim at
// that index, one -1 is inferred from the element count. X may hold -1
// (unknown) dims at build time; the result then holds -1 where it cannot be known.
Shape ResolveReshape(const Shape& in, const std::vector<int64_t>& spec);

// reshape's Out on every place: X viewed in the `shape` attribute resolved
// against X's shape (ResolveReshape), sharing X's memory.
Tensor ReshapeView(const KernelContext& ctx);

// reshape_grad on every place, but for writing zeros: nothing without an
// X@GRAD output; else X@GRAD = Out@GRAD viewed in X's shape (sharing its
// memory), which must have X's element count and type (kInvalidArgument);
// without Out@GRAD, X@GRAD allocated on `place` with X's shape and type and
// returned, for the caller to fill with zeros. Null when there is nothing
// to fill.
Tensor* ReshapeGradOrZeros(KernelContext& ctx, Place place);

// Sizes of split's parts along the axis: `num` equal ones or `sections` (one
// may be -1: the rest), for `outputs` Out variables. `dim` is -1 when unknown
// (build time); sizes that depend on it are then -1 too.
std::vector<int64_t> SplitPartSizes(int64_t dim, int num, const std::vector<int64_t>& sections,
                                    int outputs);

// Pairs concat_grad's X[i] with its entry of the X@GRAD slot. append_backward
// drops the gradients of inputs that need none, so when the lists differ in
// length the pairing goes by name ("x@GRAD", or the "x@GRAD@RENAME@n" of a
// second contribution); order is kept, so one forward pass suffices.
class ConcatGradMatcher {
 public:
  // `inputs`: how many variables the X slot holds.
  ConcatGradMatcher(const proto::OpDesc& op, int inputs);
  // Whether the op binds the X@GRAD slot, and whether to any variable.
  bool bound() const { return grads_ != nullptr; }
  bool any() const { return grads_ != nullptr && grads_->vars_size() > 0; }
  // Index into X@GRAD of input i named `name`, or -1; call with i = 0, 1, ... in order.
  int Next(int i, const std::string& name);

 private:
  const proto::Slot* grads_;  // the op's X@GRAD slot, or null
  bool positional_;
  int next_ = 0;
};

// Pairs split_grad's Out[k] with its entry of Out@GRAD: positionally when
// every part has one, else by name ("out@GRAD"), as append_backward unbinds
// the gradients nobody produced.
class SplitGradMatcher {
 public:
  explicit SplitGradMatcher(const KernelContext& ctx);
  // Index into Out@GRAD of part k, or -1; call with k = 0, 1, ... in order.
  int Next(int k);

 private:
  const KernelContext& ctx_;
  int parts_;
  int grads_;
  int next_ = 0;
};

}  // namespace rill
