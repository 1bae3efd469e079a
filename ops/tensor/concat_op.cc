// concat: Out = the X tensors joined along `axis`. Its gradient slices
// Out@GRAD back into one piece per input.
#include <vector>

#include "ops/tensor/axis_layout.h"
#include "ops/tensor/shape_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void ConcatShape(ShapeContext& ctx) {
  const int n = ctx.InputCount("X");
  ctx.Check(n >= 1, "concat needs at least one input");
  Shape out = ctx.InputShape("X", 0);
  const DataType dtype = ctx.InputType("X", 0);
  const int rank = static_cast<int>(out.size());
  const int axis = ConcatAxis(ctx.Attr<int>("axis"), rank);
  for (int i = 1; i < n; ++i) {
    const Shape& s = ctx.InputShape("X", i);
    ctx.Check(static_cast<int>(s.size()) == rank, "X[", i, "] ", ShapeToString(s),
              " has a different rank from X[0] ", ShapeToString(out));
    ctx.Check(ctx.InputType("X", i) == dtype, "X[", i, "] is ", DataTypeName(ctx.InputType("X", i)),
              ", X[0] is ", DataTypeName(dtype));
    for (int d = 0; d < rank; ++d) {
      if (d == axis) {
        out[d] = (out[d] < 0 || s[d] < 0) ? -1 : out[d] + s[d];
      } else {
        ctx.CheckDim(out[d], s[d], StrCat("X[", i, "] ", ShapeToString(s), " dim ", d));
        if (out[d] < 0) out[d] = s[d];
      }
    }
  }
  for (const auto& name : OutputVars(ctx.op(), "Out")) {
    for (int i = 0; i < n; ++i) {
      ctx.Check(name != ctx.InputName("X", i), "Out may not be one of the inputs (", name, ")");
    }
  }
  ctx.SetOutput("Out", out, dtype);
}

void ConcatKernel(KernelContext& ctx) {
  const AxisLayout layout = ConcatLayoutOf(ctx);
  Tensor* out = ctx.Output("Out");
  out->Allocate(layout.dtype, layout.joined_shape);
  for (int i = 0; i < layout.parts(); ++i) {
    // Nothing to copy from an empty X, which may hold no memory.
    if (layout.part_rows[static_cast<size_t>(i)] == 0) continue;
    CopyPartIn(layout, i, ctx.Input("X", i).raw_data(), out->raw_data());
  }
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled; zeros if Out@GRAD is missing.
void ConcatGradKernel(KernelContext& ctx) {
  const ConcatGrads grads = ReadConcatGrads(ctx);
  for (int i = 0; i < grads.layout.parts(); ++i) {
    const int g = grads.grad_index[static_cast<size_t>(i)];
    if (g < 0) continue;
    Tensor* dx = ctx.Output(GradVarName("X"), g);
    dx->Allocate(grads.layout.dtype, grads.layout.part_shapes[static_cast<size_t>(i)]);
    CopyPartOut(grads.layout, i, grads.dout, dx->raw_data());
  }
}

void ConcatGradShape(ShapeContext& ctx) {
  const int n = ctx.InputCount("X");
  ConcatGradMatcher matcher(ctx.op(), n);
  if (!matcher.bound()) return;
  for (int i = 0; i < n; ++i) {
    const int g = matcher.Next(i, ctx.InputName("X", i));
    if (g >= 0) ctx.SetOutput(GradVarName("X"), ctx.InputShape("X", i), ctx.InputType("X", i), g);
  }
}

}  // namespace

RILL_REGISTER_OP(concat,
                 OpSchema("concat")
                     .Doc("Out = the X tensors joined along axis.")
                     .Input("X", "tensors of equal shape except along axis", kDuplicable)
                     .Output("Out", "the joined tensor")
                     .Attr("axis", 0, "the axis to join along (negative counts from the end)")
                     .InferShape(ConcatShape)
                     .CpuKernel(ConcatKernel)
                     .DefaultGrad());

RILL_REGISTER_OP(concat_grad,
                 OpSchema("concat_grad")
                     .Doc("X@GRAD[i] = the part of Out@GRAD that X[i] filled.")
                     .Input("X", "the forward inputs", kDuplicable | kNoGradient)
                     .Input("Out", "the forward output (unused)", kOptional | kNoGradient)
                     .Input("Out@GRAD", "gradient of Out", kOptional)
                     .Output("X@GRAD", "gradients of the inputs that need one",
                             kDuplicable | kOptional)
                     .Attr("axis", 0, "the forward axis")
                     .InferShape(ConcatGradShape)
                     .CpuKernel(ConcatGradKernel));

}  // namespace rill
