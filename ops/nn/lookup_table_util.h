// What lookup_table's CPU kernels (lookup_table_op.cc) and CUDA kernels
// (embedding_dropout_op_cuda.cc) share: Out's shape, the inputs read and
// checked (W, Ids, each id looked up, Out@GRAD) in the same order with the
// same messages on every place, and the gradient's sparse/dense dispatch.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/kernel_context.h"

namespace rill {

// Ids [..., 1] gives Out [..., D]; Ids [N] gives Out [N, D].
Shape LookupOutShape(const Shape& ids, int64_t width);

// The inputs of lookup_table and lookup_table_grad.
struct LookupArgs {
  const Tensor& w;    // the table [V, D]
  const Tensor& ids;  // [N, 1] or [N]
  int64_t padding_idx;
};
// Reads them; throws kInvalidArgument unless W is [V, D], Ids [..., 1] or [N]
// and padding_idx is below V.
LookupArgs ReadLookupArgs(const KernelContext& ctx);

// Whether `id` is the padding row, which reads as zeros and gets no gradient.
inline bool IsPaddingId(int64_t id, int64_t padding_idx) {
  return id == padding_idx && padding_idx >= 0;
}

// Throws kInvalidArgument naming Ids row i unless `id` is one of `rows` rows.
void CheckId(int64_t i, int64_t id, int64_t rows);

// The positions in ids[0, n) of the ids that are not padding, increasing,
// each id checked (CheckId) on the way, first to last.
std::vector<int64_t> LookedUpPositions(const int64_t* ids, int64_t n, int64_t rows,
                                       int64_t padding_idx);

// With is_sparse: sets W@GRAD's height and rows (the ids, on the host, that
// are not padding, in order, repeats kept, each checked as LookedUpPositions
// checks them) and returns their positions in Ids, whose Out@GRAD rows the
// caller puts in dw->value.
std::vector<int64_t> SetLookedUpRows(const int64_t* ids, const LookupArgs& args, SelectedRows* dw);

// What one place does for lookup_table_grad with the checked inputs and
// Out@GRAD (null when absent: zero).
using LookupGradBody = void (*)(KernelContext& ctx, const LookupArgs& args, const Tensor* dy);

// lookup_table_grad on every place: nothing without a W@GRAD output; else
// the inputs read and checked (ReadLookupArgs, then Out@GRAD, which must
// hold a row of W's width for every id) and handed to `sparse` (is_sparse:
// W@GRAD is selected rows) or `dense`.
void RunLookupTableGrad(KernelContext& ctx, LookupGradBody sparse, LookupGradBody dense);

}  // namespace rill
