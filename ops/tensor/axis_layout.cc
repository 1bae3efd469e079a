#include "ops/tensor/axis_layout.h"

#include <cstring>

#include "ops/tensor/shape_util.h"
#include "rill/op_desc.h"

namespace rill {
namespace {

// Adds a part of `shape` to the layout: its bytes per row from `axis` on
// (measured with `rank`, the joined tensor's), placed after the others.
void AddPart(AxisLayout* layout, const Shape& shape, int axis, int rank) {
  const int64_t row = DimProduct(shape, axis, rank) * static_cast<int64_t>(SizeOf(layout->dtype));
  layout->part_shapes.push_back(shape);
  layout->part_offsets.push_back(layout->joined_row);
  layout->part_rows.push_back(row);
  layout->joined_row += row;
}

// The X inputs as parts, along the axis, with X[0]'s rank and type (the
// kernels measured every input so: concat_grad does not check that they
// agree). With `check`, concat's checks and Out's shape.
AxisLayout ConcatInputs(const KernelContext& ctx, bool check) {
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const int axis = ConcatAxis(ctx.Attr<int>("axis"), rank);
  AxisLayout layout;
  layout.dtype = first.dtype();
  if (check) layout.joined_shape = ConcatOutShape(ctx, axis);
  layout.outer = DimProduct(first.shape(), 0, axis);
  for (int i = 0; i < ctx.InputCount("X"); ++i)
    AddPart(&layout, ctx.Input("X", i).shape(), axis, rank);
  return layout;
}

// X's parts along the axis for `parts` Out variables.
AxisLayout SplitParts(const KernelContext& ctx, int axis, int parts) {
  const Tensor& x = ctx.Input("X");
  const std::vector<int64_t> sizes = SplitPartSizes(
      x.dim(axis), ctx.Attr<int>("num"), ctx.Attr<std::vector<int64_t>>("sections"), parts);
  AxisLayout layout;
  layout.dtype = x.dtype();
  layout.joined_shape = x.shape();
  layout.outer = DimProduct(x.shape(), 0, axis);
  for (int64_t size : sizes) {
    Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = size;
    AddPart(&layout, shape, axis, x.rank());
  }
  return layout;
}

}  // namespace

AxisLayout ConcatLayoutOf(const KernelContext& ctx) {
  RILL_CHECK(ctx.InputCount("X") >= 1, kInvalidArgument, "concat needs at least one input");
  return ConcatInputs(ctx, /*check=*/true);
}

ConcatGrads ReadConcatGrads(const KernelContext& ctx) {
  const int n = ctx.InputCount("X");
  ConcatGradMatcher matcher(ctx.op(), n);
  ConcatGrads grads;
  if (!matcher.any()) return grads;
  grads.layout = ConcatInputs(ctx, /*check=*/false);
  const AxisLayout& layout = grads.layout;
  if (ctx.InputReady("Out@GRAD")) {
    const Tensor& g = ctx.Input("Out@GRAD");
    RILL_CHECK(
        g.dtype() == layout.dtype && g.numel() * static_cast<int64_t>(SizeOf(layout.dtype)) ==
                                         layout.joined_row * layout.outer,
        kInvalidArgument, "Out@GRAD ", g.Describe(), " does not match the inputs");
    grads.dout = static_cast<const char*>(g.raw_data());
  }
  for (int i = 0; i < n; ++i) grads.grad_index.push_back(matcher.Next(i, ctx.InputName("X", i)));
  return grads;
}

AxisLayout SplitLayoutOf(const KernelContext& ctx) {
  const int axis = SplitAxis(ctx.Attr<int>("axis"), ctx.Input("X").rank());
  return SplitParts(ctx, axis, ctx.OutputCount("Out"));
}

SplitGrads ReadSplitGrads(const KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int axis = SplitAxis(ctx.Attr<int>("axis"), x.rank());
  const int parts = ctx.InputCount("Out");
  RILL_CHECK(parts >= 1, kInvalidArgument, "split_grad needs the forward Out variables");
  SplitGrads grads{SplitParts(ctx, axis, parts), {}};
  const AxisLayout& layout = grads.layout;
  SplitGradMatcher matcher(ctx);
  for (int k = 0; k < parts; ++k) {
    const int g = matcher.Next(k);
    const char* dout = nullptr;
    if (g >= 0 && ctx.InputReady("Out@GRAD", g)) {
      const Tensor& t = ctx.Input("Out@GRAD", g);
      RILL_CHECK(
          t.dtype() == layout.dtype && t.numel() * static_cast<int64_t>(SizeOf(layout.dtype)) ==
                                           layout.part_rows[static_cast<size_t>(k)] * layout.outer,
          kInvalidArgument, "Out@GRAD[", g, "] ", t.Describe(), " does not match part ", k,
          " of X ", x.Describe());
      dout = static_cast<const char*>(t.raw_data());
    }
    grads.dout.push_back(dout);
  }
  return grads;
}

void CopyPartIn(const AxisLayout& layout, int i, const void* part, void* joined) {
  const int64_t row = layout.part_rows[static_cast<size_t>(i)];
  if (row <= 0 || layout.outer <= 0) return;
  char* dst = static_cast<char*>(joined) + layout.part_offsets[static_cast<size_t>(i)];
  const char* src = static_cast<const char*>(part);
  for (int64_t o = 0; o < layout.outer; ++o) {
    if (src == nullptr) {
      std::memset(dst + o * layout.joined_row, 0, static_cast<size_t>(row));
    } else {
      std::memcpy(dst + o * layout.joined_row, src + o * row, static_cast<size_t>(row));
    }
  }
}

void CopyPartOut(const AxisLayout& layout, int i, const void* joined, void* part) {
  const int64_t row = layout.part_rows[static_cast<size_t>(i)];
  if (row <= 0 || layout.outer <= 0) return;
  char* dst = static_cast<char*>(part);
  if (joined == nullptr) {
    std::memset(dst, 0, static_cast<size_t>(row * layout.outer));
    return;
  }
  const char* src = static_cast<const char*>(joined) + layout.part_offsets[static_cast<size_t>(i)];
  for (int64_t o = 0; o < layout.outer; ++o) {
    std::memcpy(dst + o * row, src + o * layout.joined_row, static_cast<size_t>(row));
  }
}

}  // namespace rill
