// split: Out = X cut into parts along `axis`, `num` equal ones or of the
// sizes in `sections`. Its gradient joins the Out gradients back together.
#include <vector>

#include "ops/tensor/axis_layout.h"
#include "ops/tensor/shape_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SplitShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const int rank = static_cast<int>(x.size());
  const int axis = SplitAxis(ctx.Attr<int>("axis"), rank);
  const int outputs = ctx.OutputCount("Out");
  const std::vector<int64_t> sizes = SplitPartSizes(
      x[axis], ctx.Attr<int>("num"), ctx.Attr<std::vector<int64_t>>("sections"), outputs);
  for (const auto& name : OutputVars(ctx.op(), "Out")) {
    ctx.Check(name != ctx.InputName("X"), "Out may not be X (", name, ")");
  }
  for (int k = 0; k < outputs; ++k) {
    Shape s = x;
    s[axis] = sizes[static_cast<size_t>(k)];
    ctx.SetOutput("Out", s, ctx.InputType("X"), k);
  }
}

void SplitKernel(KernelContext& ctx) {
  const AxisLayout layout = SplitLayoutOf(ctx);
  const void* x = ctx.Input("X").raw_data();
  for (int k = 0; k < layout.parts(); ++k) {
    Tensor* out = ctx.Output("Out", k);
    out->Allocate(layout.dtype, layout.part_shapes[static_cast<size_t>(k)]);
    CopyPartOut(layout, k, x, out->raw_data());
  }
}

// X@GRAD = the Out gradients joined along the axis; a missing one reads as zeros.
void SplitGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const SplitGrads grads = ReadSplitGrads(ctx);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Allocate(grads.layout.dtype, grads.layout.joined_shape);
  for (int k = 0; k < grads.layout.parts(); ++k) {
    CopyPartIn(grads.layout, k, grads.dout[static_cast<size_t>(k)], dx->raw_data());
  }
}

void SplitGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

}  // namespace

RILL_REGISTER_OP(
    split, OpSchema("split")
               .Doc("Out = X cut along axis into num equal parts or parts of the given sizes.")
               .Input("X", "input tensor")
               .Output("Out", "the parts, in order", kDuplicable)
               .Attr("axis", 0, "the axis to cut along (negative counts from the end)")
               .Attr("num", 0, "number of equal parts (0: one per Out variable)", AtLeast(0))
               .Attr("sections", std::vector<int64_t>{},
                     "sizes of the parts (one may be -1: the rest)", AtLeast(-1))
               .InferShape(SplitShape)
               .CpuKernel(SplitKernel)
               .DefaultGrad());

RILL_REGISTER_OP(split_grad,
                 OpSchema("split_grad")
                     .Doc("X@GRAD = the Out gradients joined along axis (missing ones as zeros).")
                     .Input("X", "the forward input", kNoGradient)
                     .Input("Out", "the forward outputs (for pairing gradients by name)",
                            kDuplicable | kNoGradient)
                     .Input("Out@GRAD", "gradients of Out", kDuplicable | kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Attr("axis", 0, "the forward axis")
                     .Attr("num", 0, "the forward num", AtLeast(0))
                     .Attr("sections", std::vector<int64_t>{}, "the forward sections", AtLeast(-1))
                     .InferShape(SplitGradShape)
                     .CpuKernel(SplitGradKernel));

}  // namespace rill
