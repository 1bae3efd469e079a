#include "ops/nn/batch_norm_util.h"

#include "rill/error.h"

namespace rill {
namespace {

// Throws unless `slot` of `op` holds a [c] tensor of `dtype`.
const Tensor& ChannelVector(const KernelContext& ctx, const char* op, const char* slot, int64_t c,
                            DataType dtype) {
  const Tensor& t = ctx.Input(slot);
  RILL_CHECK(t.rank() == 1 && t.dim(0) == c && t.dtype() == dtype, kInvalidArgument, op, ": ", slot,
             " (", ctx.InputName(slot), ") is ", t.Describe(), " but must be [", c, "] ",
             DataTypeName(dtype), " (X's channels and type)");
  return t;
}

}  // namespace

BatchNormDims BatchNormDimsOf(const char* op, const std::string& x_name, const Shape& x) {
  RILL_CHECK(x.size() == 2 || x.size() == 4, kInvalidArgument, op, ": X (", x_name,
             ") must be [N, C] or [N, C, H, W], is ", ShapeToString(x));
  BatchNormDims d;
  d.n = x[0];
  d.c = x[1];
  if (x.size() == 4) d.hw = x[2] < 0 || x[3] < 0 ? -1 : x[2] * x[3];
  return d;
}

BatchNormForward CheckBatchNormKernel(const KernelContext& ctx, const char* op) {
  BatchNormForward f;
  f.x = &ctx.Input("X");
  f.dims = BatchNormDimsOf(op, ctx.InputName("X"), f.x->shape());
  const DataType dtype = f.x->dtype();
  f.scale = &ChannelVector(ctx, op, "Scale", f.dims.c, dtype);
  f.bias = &ChannelVector(ctx, op, "Bias", f.dims.c, dtype);
  f.mean = &ChannelVector(ctx, op, "Mean", f.dims.c, dtype);
  f.variance = &ChannelVector(ctx, op, "Variance", f.dims.c, dtype);
  f.momentum = ctx.Attr<float>("momentum");
  f.epsilon = ctx.Attr<float>("epsilon");
  f.is_test = ctx.Attr<bool>("is_test");
  RILL_CHECK(f.is_test || f.dims.per_channel() > 0, kInvalidArgument, op, ": X (",
             ctx.InputName("X"), ") ", f.x->Describe(),
             " has no elements to take batch statistics over");
  return f;
}

BatchNormBackward CheckBatchNormGradKernel(const KernelContext& ctx, const char* op) {
  BatchNormBackward b;
  b.x = &ctx.Input("X");
  b.dims = BatchNormDimsOf(op, ctx.InputName("X"), b.x->shape());
  const DataType dtype = b.x->dtype();
  b.scale = &ChannelVector(ctx, op, "Scale", b.dims.c, dtype);
  b.saved_mean = &ChannelVector(ctx, op, "SavedMean", b.dims.c, dtype);
  b.saved_inv_std = &ChannelVector(ctx, op, "SavedVariance", b.dims.c, dtype);
  b.is_test = ctx.Attr<bool>("is_test");
  if (ctx.InputReady("Y@GRAD")) {
    b.dy = &ctx.Input("Y@GRAD");
    RILL_CHECK(b.dy->shape() == b.x->shape() && b.dy->dtype() == dtype, kInvalidArgument, op,
               ": Y@GRAD (", ctx.InputName("Y@GRAD"), ") is ", b.dy->Describe(), " but X is ",
               b.x->Describe());
  }
  return b;
}

}  // namespace rill
