// conv2d's and pool2d's attributes, input checks and geometry
// (conv_pool_geometry.h).
#include "ops/nn/conv_pool_geometry.h"

#include <algorithm>
#include <string>
#include <vector>

#include "rill/kernel_context.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

// A (height, width) attribute of `op`: 2 values, each at least `min`.
template <class Ctx>
std::vector<int64_t> ReadPair(const Ctx& ctx, const char* op, const char* name, int64_t min) {
  auto v = ctx.template Attr<std::vector<int64_t>>(name);
  RILL_CHECK(v.size() == 2 && v[0] >= min && v[1] >= min, kInvalidArgument, op, ": attribute ",
             name, " must be 2 values (height, width) >= ", min, ", is ", ShapeToString(v));
  return v;
}

template <class Ctx>
ConvParams ReadConv(const Ctx& ctx) {
  const auto strides = ReadPair(ctx, "conv2d", "strides", 1);
  const auto paddings = ReadPair(ctx, "conv2d", "paddings", 0);
  const auto dilations = ReadPair(ctx, "conv2d", "dilations", 1);
  const int64_t groups = ctx.template Attr<int64_t>("groups");
  RILL_CHECK(groups >= 1, kInvalidArgument, "conv2d: attribute groups must be at least 1, is ",
             groups);
  return {strides[0], strides[1], paddings[0], paddings[1], dilations[0], dilations[1], groups};
}

template <class Ctx>
PoolParams ReadPool(const Ctx& ctx) {
  const std::string type = ctx.template Attr<std::string>("pooling_type");
  RILL_CHECK(type == "max" || type == "avg", kInvalidArgument,
             "pool2d: pooling_type must be \"max\" or \"avg\", is \"", type, "\"");
  const bool global = ctx.template Attr<bool>("global_pooling");
  const bool exclusive = ctx.template Attr<bool>("exclusive");
  const auto ksize = ReadPair(ctx, "pool2d", "ksize", 1);
  const auto strides = ReadPair(ctx, "pool2d", "strides", 1);
  const auto paddings = ReadPair(ctx, "pool2d", "paddings", 0);
  return {type == "max", global,     exclusive,   ksize[0],   ksize[1],
          strides[0],    strides[1], paddings[0], paddings[1]};
}

// Sets `g` to images x ([N, C, H, W]) swept by a kernel_h x kernel_w window
// with the strides and paddings of `p` (conv2d's or pool2d's attributes).
template <class Params>
void SetWindow(Window2d& g, const Shape& x, int64_t kernel_h, int64_t kernel_w, const Params& p) {
  g.batch = x[0];
  g.channels = x[1];
  g.height = x[2];
  g.width = x[3];
  g.kernel_h = kernel_h;
  g.kernel_w = kernel_w;
  g.stride_h = p.stride_h;
  g.stride_w = p.stride_w;
  g.pad_h = p.pad_h;
  g.pad_w = p.pad_w;
}

// The output gradient bound to `slot`, or null: a missing one is zero.
const Tensor* OutputGrad(const KernelContext& ctx, const char* slot) {
  return ctx.HasInput(slot) ? &ctx.Input(slot) : nullptr;
}

// The output gradient, when bound, has the forward output's shape.
void CheckOutputGrad(const Tensor* dout, const char* op, const char* slot, const Shape& out_shape) {
  RILL_CHECK(dout == nullptr || dout->shape() == out_shape, kInvalidArgument, op, ": ", slot,
             " is ", ShapeToString(dout ? dout->shape() : Shape{}), " but the output is ",
             ShapeToString(out_shape));
}

}  // namespace

ConvParams ReadConvParams(const ShapeContext& ctx) { return ReadConv(ctx); }
ConvParams ReadConvParams(const KernelContext& ctx) { return ReadConv(ctx); }

ConvGeometry MakeConvGeometry(const Shape& input, const Shape& filter, const ConvParams& p) {
  RILL_CHECK(input.size() == 4, kInvalidArgument, "conv2d: Input must be [N, C, H, W], is ",
             ShapeToString(input));
  RILL_CHECK(filter.size() == 4 &&
                 std::all_of(filter.begin(), filter.end(), [](int64_t d) { return d >= 1; }),
             kInvalidArgument,
             "conv2d: Filter must be [M, C / groups, kh, kw] with known dims, is ",
             ShapeToString(filter));
  RILL_CHECK(filter[0] % p.groups == 0, kInvalidArgument, "conv2d: Filter ", ShapeToString(filter),
             " has ", filter[0], " output channels, which groups = ", p.groups, " does not divide");
  RILL_CHECK(input[1] < 0 || input[1] == filter[1] * p.groups, kInvalidArgument, "conv2d: Input ",
             ShapeToString(input), " has ", input[1], " channels but Filter ",
             ShapeToString(filter), " with groups = ", p.groups, " expects ", filter[1] * p.groups);
  ConvGeometry g;
  SetWindow(g, input, filter[2], filter[3], p);
  g.dilation_h = p.dilation_h;
  g.dilation_w = p.dilation_w;
  g.out_channels = filter[0];
  g.groups = p.groups;
  RILL_CHECK(g.Fits(), kInvalidArgument, "conv2d: Filter ", ShapeToString(filter), " (dilations [",
             p.dilation_h, ", ", p.dilation_w, "]) is larger than Input ", ShapeToString(input),
             " padded by [", p.pad_h, ", ", p.pad_w, "]");
  g.SetOutputSize();
  return g;
}

Shape ConvOutputShape(const ConvGeometry& g) { return {g.batch, g.out_channels, g.out_h, g.out_w}; }

ConvRun CheckConvKernel(const KernelContext& ctx, bool grad) {
  const char* op = grad ? "conv2d_grad" : "conv2d";
  ConvRun run;
  run.input = &ctx.Input("Input");
  run.filter = &ctx.Input("Filter");
  run.dout = grad ? OutputGrad(ctx, "Output@GRAD") : nullptr;
  const ConvParams p = ReadConvParams(ctx);
  run.geo = MakeConvGeometry(run.input->shape(), run.filter->shape(), p);
  RILL_CHECK(run.filter->dtype() == run.input->dtype(), kInvalidArgument, op, ": Filter is ",
             DataTypeName(run.filter->dtype()), " but Input is ", DataTypeName(run.input->dtype()));
  if (grad) CheckOutputGrad(run.dout, op, "Output@GRAD", ConvOutputShape(run.geo));
  return run;
}

PoolParams ReadPoolParams(const ShapeContext& ctx) { return ReadPool(ctx); }
PoolParams ReadPoolParams(const KernelContext& ctx) { return ReadPool(ctx); }

PoolGeometry MakePoolGeometry(const Shape& x, const PoolParams& p) {
  RILL_CHECK(x.size() == 4, kInvalidArgument, "pool2d: X must be [N, C, H, W], is ",
             ShapeToString(x));
  RILL_CHECK(x[2] != 0 && x[3] != 0, kInvalidArgument, "pool2d: X ", ShapeToString(x),
             " has an empty plane");
  PoolGeometry g;
  g.is_max = p.is_max;
  g.exclusive = p.exclusive;
  if (p.global) {  // the window is the plane: stride 1, no padding
    SetWindow(g, x, x[2], x[3], PoolParams{});
    g.out_h = g.out_w = 1;
    return g;
  }
  RILL_CHECK(p.pad_h < p.kernel_h && p.pad_w < p.kernel_w, kInvalidArgument, "pool2d: paddings [",
             p.pad_h, ", ", p.pad_w, "] must be smaller than ksize [", p.kernel_h, ", ", p.kernel_w,
             "]");
  SetWindow(g, x, p.kernel_h, p.kernel_w, p);
  RILL_CHECK(g.Fits(), kInvalidArgument, "pool2d: ksize [", p.kernel_h, ", ", p.kernel_w,
             "] is larger than X ", ShapeToString(x), " padded by [", p.pad_h, ", ", p.pad_w, "]");
  g.SetOutputSize();
  return g;
}

Shape PoolOutputShape(const PoolGeometry& g) { return {g.batch, g.channels, g.out_h, g.out_w}; }

PoolRun CheckPoolKernel(const KernelContext& ctx, bool grad) {
  PoolRun run;
  run.x = &ctx.Input("X");
  run.dout = grad ? OutputGrad(ctx, "Out@GRAD") : nullptr;
  const PoolParams p = ReadPoolParams(ctx);
  run.geo = MakePoolGeometry(run.x->shape(), p);
  if (grad) CheckOutputGrad(run.dout, "pool2d_grad", "Out@GRAD", PoolOutputShape(run.geo));
  return run;
}

}  // namespace rill
