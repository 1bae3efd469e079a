// reshape: Out = X with a new shape (sharing X's memory). In `shape`, 0 copies
// X's dim at that index and one -1 is inferred from the element count.
#include <vector>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Resolves the `shape` attribute against X's shape. X may hold -1 (unknown)
// dims at build time; the result then holds -1 where it cannot be known.
Shape ResolveShape(const Shape& in, const std::vector<int64_t>& spec) {
  Shape out(spec.size(), -1);
  int infer_at = -1;
  int64_t known_out = 1;   // product of the known dims of Out, except the inferred one
  int copied_unknown = 0;  // unknown dims of X that a 0 copies into Out
  for (size_t i = 0; i < spec.size(); ++i) {
    const int64_t s = spec[i];
    if (s == -1) {
      RILL_CHECK(infer_at < 0, kInvalidArgument, "shape ", ShapeToString(spec),
                 " has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (s == 0) {
      RILL_CHECK(i < in.size(), kInvalidArgument, "shape ", ShapeToString(spec), " has 0 at index ",
                 i, ", but X ", ShapeToString(in), " has no dim there to copy");
      out[i] = in[i];
      if (in[i] < 0) {
        ++copied_unknown;
      } else {
        known_out = CheckedMultiply(known_out, in[i]);
      }
    } else {
      RILL_CHECK(s > 0, kInvalidArgument, "shape ", ShapeToString(spec), " has dim ", s,
                 " (dims must be > 0, 0 to copy or -1 to infer)");
      out[i] = s;
      known_out = CheckedMultiply(known_out, s);
    }
  }
  int64_t known_in = 1;
  int unknown_in = 0;
  for (int64_t d : in) {
    if (d < 0) {
      ++unknown_in;
    } else {
      known_in = CheckedMultiply(known_in, d);
    }
  }
  // Unknown dims of X copied by a 0 cancel out; any other leaves the count unknown.
  if (unknown_in != copied_unknown) return out;
  if (infer_at >= 0) {
    RILL_CHECK(known_out > 0 && known_in % known_out == 0, kInvalidArgument, "cannot reshape X ",
               ShapeToString(in), " to ", ShapeToString(spec), ": ", known_in,
               " elements do not divide into dims of product ", known_out);
    out[static_cast<size_t>(infer_at)] = known_in / known_out;
  } else {
    RILL_CHECK(known_in == known_out, kInvalidArgument, "cannot reshape X ", ShapeToString(in),
               " to ", ShapeToString(spec), ": element counts differ (", known_in, " vs ",
               known_out, ")");
  }
  return out;
}

void ReshapeShape(ShapeContext& ctx) {
  ctx.SetOutput("Out", ResolveShape(ctx.InputShape("X"), ctx.Attr<std::vector<int64_t>>("shape")),
                ctx.InputType("X"));
}

void ReshapeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Shape shape = ResolveShape(x.shape(), ctx.Attr<std::vector<int64_t>>("shape"));
  *ctx.Output("Out") = x.Reshaped(shape);
}

// X@GRAD = Out@GRAD viewed with X's shape; a missing Out@GRAD means zeros.
void ReshapeGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const Shape shape = x.shape();
  const DataType dtype = x.dtype();
  Tensor* dx = ctx.Output("X@GRAD");
  if (!ctx.InputReady("Out@GRAD")) {
    dx->Allocate(dtype, shape);
    dx->Fill(0);
    return;
  }
  const Tensor& dout = ctx.Input("Out@GRAD");
  RILL_CHECK(dout.numel() == NumElements(shape) && dout.dtype() == dtype, kInvalidArgument,
             "Out@GRAD ", dout.Describe(), " does not match X ", x.Describe());
  *dx = dout.Reshaped(shape);
}

void ReshapeGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

std::vector<proto::OpDesc> ReshapeGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("reshape_grad");
  const std::string x = InputVar(fwd, "X");
  SetInput(&grad, "X", {x});
  SetInput(&grad, GradVarName("Out"), {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, GradVarName("X"), {GradVarName(x)});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(reshape,
                 OpSchema("reshape")
                     .Doc("Out = X with a new shape, sharing X's memory.")
                     .Input("X", "input tensor")
                     .Output("Out", "X's elements in the new shape")
                     .RequiredAttr("shape", AttrType::kInts,
                                   "new dims: 0 copies X's dim at that index, one -1 is inferred")
                     .InferShape(ReshapeShape)
                     .CpuKernel(ReshapeKernel)
                     .Grad(ReshapeGrad));

RILL_REGISTER_OP(reshape_grad, OpSchema("reshape_grad")
                                   .Doc("X@GRAD = Out@GRAD in X's shape.")
                                   .Input("X", "the forward input (for its shape)", kNoGradient)
                                   .Input("Out@GRAD", "gradient of Out", kOptional)
                                   .Output("X@GRAD", "gradient of X", kOptional)
                                   .InferShape(ReshapeGradShape)
                                   .CpuKernel(ReshapeGradKernel));

}  // namespace rill
