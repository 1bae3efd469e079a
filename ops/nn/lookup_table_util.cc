#include "ops/nn/lookup_table_util.h"

namespace rill {

Shape LookupOutShape(const Shape& ids, int64_t width) {
  Shape out = ids;
  if (out.size() >= 2) {
    out.back() = width;
  } else {
    out.push_back(width);
  }
  return out;
}

LookupArgs ReadLookupArgs(const KernelContext& ctx) {
  const LookupArgs args{ctx.Input("W"), ctx.Input("Ids"), ctx.Attr<int64_t>("padding_idx")};
  const Tensor& w = args.w;
  const Tensor& ids = args.ids;
  RILL_CHECK(w.rank() == 2, kInvalidArgument, "W must be [V, D], is ", w.Describe());
  RILL_CHECK(ids.rank() == 1 || (ids.rank() >= 2 && ids.dim(ids.rank() - 1) == 1), kInvalidArgument,
             "Ids must be [N, 1] or [N], is ", ids.Describe());
  RILL_CHECK(args.padding_idx < w.dim(0), kInvalidArgument, "padding_idx ", args.padding_idx,
             " is not a row of W ", ShapeToString(w.shape()));
  return args;
}

void CheckId(int64_t i, int64_t id, int64_t rows) {
  RILL_CHECK(id >= 0 && id < rows, kInvalidArgument, "Ids row ", i, " is ", id,
             ", outside the table's rows [0, ", rows, ")");
}

std::vector<int64_t> LookedUpPositions(const int64_t* ids, int64_t n, int64_t rows,
                                       int64_t padding_idx) {
  std::vector<int64_t> positions;
  positions.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (IsPaddingId(ids[i], padding_idx)) continue;
    CheckId(i, ids[i], rows);
    positions.push_back(i);
  }
  return positions;
}

std::vector<int64_t> SetLookedUpRows(const int64_t* ids, const LookupArgs& args, SelectedRows* dw) {
  dw->height = args.w.dim(0);
  dw->rows.clear();
  std::vector<int64_t> positions =
      LookedUpPositions(ids, args.ids.numel(), args.w.dim(0), args.padding_idx);
  for (int64_t i : positions) dw->rows.push_back(ids[i]);
  return positions;
}

void RunLookupTableGrad(KernelContext& ctx, LookupGradBody sparse, LookupGradBody dense) {
  if (!ctx.HasOutput("W@GRAD")) return;
  const LookupArgs args = ReadLookupArgs(ctx);
  const Tensor* dy = nullptr;
  if (ctx.InputReady("Out@GRAD")) {
    dy = &ctx.Input("Out@GRAD");
    const int64_t width = args.w.dim(1);
    RILL_CHECK(dy->numel() == args.ids.numel() * width, kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(dy->shape()), ", want ",
               ShapeToString(LookupOutShape(args.ids.shape(), width)));
  }
  if (ctx.Attr<bool>("is_sparse")) {
    sparse(ctx, args, dy);
  } else {
    dense(ctx, args, dy);
  }
}

}  // namespace rill
