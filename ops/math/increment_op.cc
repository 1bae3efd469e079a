// increment: Out = X + step for a one-element X of any type (Fluid's op): the
// counter of a While loop. No gradient.
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void IncrementShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  int64_t elements = 1;  // unknown dims (-1) are checked when the op runs
  for (int64_t d : x) elements *= d < 0 ? 1 : d;
  ctx.Check(elements == 1, "increment: X (", ctx.InputName("X"), ") must hold one element, is ",
            ShapeToString(x));
  ctx.SetOutput("Out", x, ctx.InputType("X"));
}

void IncrementKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  RILL_CHECK(x.numel() == 1, kInvalidArgument, "increment: X (", ctx.InputName("X"),
             ") must hold one element, holds ", x.Describe());
  const double step = ctx.Attr<float>("step");
  Tensor* out = ctx.Output("Out");
  // Read before Out is allocated: Out may be X.
  const Shape shape = x.shape();
  VisitDataType(x.dtype(), [&]<class T>() {
    const T next = static_cast<T>(x.data<T>()[0] + static_cast<T>(step));
    if (out == &x && x.shares_buffer()) *out = Tensor();  // never write a shared buffer
    *out->Allocate<T>(shape) = next;
  });
}

}  // namespace

RILL_REGISTER_OP(increment,
                 OpSchema("increment")
                     .Doc("Out = X + step, X one element of any type (a loop counter; Out may "
                          "be X).")
                     .Input("X", "one element", kNoGradient)
                     .Output("Out", "X + step, X's shape and type", kNoGradient)
                     .Attr("step", 1.0f, "what is added")
                     .InferShape(IncrementShape)
                     .CpuKernel(IncrementKernel));

}  // namespace rill
