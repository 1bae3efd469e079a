#include "ops/math/elementwise.h"

#include <utility>

#include "ops/math/binary_grad.h"
#include "rill/error.h"
#include "rill/op_desc.h"

namespace rill {
namespace {

// Y's dims with trailing 1s removed (at least one dim kept).
Shape TrimTrailingOnes(const Shape& y) {
  Shape trimmed = y;
  while (trimmed.size() > 1 && trimmed.back() == 1) trimmed.pop_back();
  return trimmed;
}

// Product of dims [begin, end), unknown (-1) dims counted as 1: at build
// time only the checks matter, at run time every dim is known.
int64_t ProductOfKnown(const Shape& shape, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p = CheckedMultiply(p, shape[i] < 0 ? 1 : shape[i]);
  return p;
}

bool KnownOne(const Shape& shape) {
  for (int64_t d : shape) {
    if (d != 1) return false;
  }
  return true;
}

void InferElementwiseShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& y = ctx.InputShape("Y");
  ctx.Check(ctx.InputType("X") == ctx.InputType("Y"), "X is ", DataTypeName(ctx.InputType("X")),
            " but Y is ", DataTypeName(ctx.InputType("Y")), ": types differ");
  SplitForBroadcast(x, y, ctx.Attr<int>("axis"));
  ctx.SetOutput("Out", x, ctx.InputType("X"));
}

void InferElementwiseGradShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& y = ctx.InputShape("Y");
  SplitForBroadcast(x, y, ctx.Attr<int>("axis"));
  if (ctx.HasInput("Out@GRAD")) {
    const Shape& dout = ctx.InputShape("Out@GRAD");
    ctx.Check(ShapesCompatible(dout, x), "Out@GRAD shape ", ShapeToString(dout),
              " differs from X shape ", ShapeToString(x));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputType("X"));
  ctx.SetOutput("Y@GRAD", y, ctx.InputType("Y"));
}

}  // namespace

BroadcastSplit SplitForBroadcast(const Shape& x, const Shape& y, int axis) {
  BroadcastSplit s;
  const int x_rank = static_cast<int>(x.size());
  if (KnownOne(y)) {  // one element: broadcast over all of X
    s.pre = ProductOfKnown(x, 0, x_rank);
    return s;
  }
  RILL_CHECK(y.size() <= x.size(), kInvalidArgument, "Y of shape ", ShapeToString(y),
             " has more dims than X of shape ", ShapeToString(x));
  if (axis == -1) axis = x_rank - static_cast<int>(y.size());
  const Shape trimmed = TrimTrailingOnes(y);
  const int y_rank = static_cast<int>(trimmed.size());
  RILL_CHECK(axis >= 0 && axis + y_rank <= x_rank, kInvalidArgument, "axis ", axis,
             " does not place Y of shape ", ShapeToString(y), " inside X of shape ",
             ShapeToString(x));
  for (int i = 0; i < y_rank; ++i) {
    const int64_t xd = x[axis + i];
    const int64_t yd = trimmed[i];
    RILL_CHECK(xd == -1 || yd == -1 || xd == yd, kInvalidArgument, "Y of shape ", ShapeToString(y),
               " does not broadcast against X of shape ", ShapeToString(x), " at axis ", axis,
               ": dim ", i, " of Y is ", yd, ", dim ", axis + i, " of X is ", xd);
  }
  s.pre = ProductOfKnown(x, 0, axis);
  s.n = ProductOfKnown(x, axis, axis + y_rank);
  s.post = ProductOfKnown(x, axis + y_rank, x_rank);
  return s;
}

OpSchema ElementwiseSchema(const std::string& type, const std::string& formula, KernelFn kernel) {
  return OpSchema(type)
      .Doc(formula + ", elementwise; Y broadcasts against X from `axis`.")
      .Input("X", "the left operand; Out has its shape")
      .Input("Y", "the right operand: X's dims from `axis` on, or one element")
      .Output("Out", "result, same shape and type as X")
      .Attr("axis", -1, "dim of X where Y's dims start; -1 aligns Y with X's trailing dims",
            AtLeast(-1))
      .InferShape(InferElementwiseShape)
      .CpuKernel(std::move(kernel))
      .Grad(BinaryGradMaker(type + "_grad", /*one_op_per_input=*/false));
}

OpSchema ElementwiseGradSchema(const std::string& type, const std::string& formula,
                               KernelFn kernel) {
  return OpSchema(type + "_grad")
      .Doc("Gradients of " + type + " (" + formula + "); Y@GRAD sums over broadcast dims.")
      .Input("X", "the forward X")
      .Input("Y", "the forward Y")
      .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
      .Output("X@GRAD", "gradient of X", kOptional)
      .Output("Y@GRAD", "gradient of Y", kOptional)
      .Attr("axis", -1, "as in the forward op", AtLeast(-1))
      .InferShape(InferElementwiseGradShape)
      .CpuKernel(std::move(kernel));
}

}  // namespace rill
