#include "ops/nn/layer_norm_util.h"

#include "rill/error.h"

namespace rill {
namespace {

// `slot` of `op` as a [n] tensor of `dtype`; null when the slot is unbound.
const Tensor* Vector(const KernelContext& ctx, const char* op, const char* slot, int64_t n,
                     DataType dtype, const char* what) {
  if (!ctx.HasInput(slot)) return nullptr;
  const Tensor& t = ctx.Input(slot);
  RILL_CHECK(t.rank() == 1 && t.dim(0) == n && t.dtype() == dtype, kInvalidArgument, op, ": ", slot,
             " (", ctx.InputName(slot), ") is ", t.Describe(), " but must be [", n, "] ",
             DataTypeName(dtype), " (", what, ")");
  return &t;
}

}  // namespace

LayerNormDims LayerNormDimsOf(const char* op, const std::string& x_name, const Shape& x,
                              int64_t axis) {
  const int64_t rank = static_cast<int64_t>(x.size());
  RILL_CHECK(axis >= 1 && axis < rank, kInvalidArgument, op, ": begin_norm_axis ", axis,
             " must be in [1, ", rank, ") for X (", x_name, ") ", ShapeToString(x));
  LayerNormDims d{1, 1};
  for (int64_t i = 0; i < rank; ++i) {
    int64_t& part = i < axis ? d.rows : d.cols;
    part = part < 0 || x[static_cast<size_t>(i)] < 0 ? -1 : part * x[static_cast<size_t>(i)];
  }
  return d;
}

LayerNormRun CheckLayerNormKernel(const KernelContext& ctx, bool grad) {
  const char* op = grad ? "layer_norm_grad" : "layer_norm";
  LayerNormRun r;
  r.x = &ctx.Input("X");
  r.dims =
      LayerNormDimsOf(op, ctx.InputName("X"), r.x->shape(), ctx.Attr<int64_t>("begin_norm_axis"));
  const DataType dtype = r.x->dtype();
  r.scale = Vector(ctx, op, "Scale", r.dims.cols, dtype, "X's normalised elements and type");
  if (!grad) {
    r.bias = Vector(ctx, op, "Bias", r.dims.cols, dtype, "X's normalised elements and type");
    r.epsilon = ctx.Attr<float>("epsilon");
    return r;
  }
  r.mean = Vector(ctx, op, "Mean", r.dims.rows, dtype, "one per row of X");
  r.variance = Vector(ctx, op, "Variance", r.dims.rows, dtype, "one per row of X");
  RILL_CHECK(r.mean != nullptr && r.variance != nullptr, kInvalidArgument, op,
             ": needs the forward Mean and Variance");
  r.epsilon = ctx.Attr<float>("epsilon");
  if (ctx.InputReady("Y@GRAD")) {
    r.dy = &ctx.Input("Y@GRAD");
    RILL_CHECK(r.dy->shape() == r.x->shape() && r.dy->dtype() == dtype, kInvalidArgument, op,
               ": Y@GRAD (", ctx.InputName("Y@GRAD"), ") is ", r.dy->Describe(), " but X is ",
               r.x->Describe());
  }
  return r;
}

}  // namespace rill
