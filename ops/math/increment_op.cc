// increment: Out = X + step for a one-element X of any type (Fluid's op): the
// counter of a While loop. No gradient.
#include "ops/tensor/step_kernels.h"
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

}  // namespace

// Computed on the host on every place (step_kernels.h): one element.
void IncrementKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  RILL_CHECK(x.numel() == 1, kInvalidArgument, "increment: X (", ctx.InputName("X"),
             ") must hold one element, holds ", x.Describe());
  const Tensor host = x.place().host_memory() ? x : x.CopyTo(Place::Cpu());
  const double step = ctx.Attr<float>("step");
  Tensor next(host.dtype(), host.shape());  // a buffer of its own: Out may be X, shared
  VisitDataType(host.dtype(), [&]<class T>() {
    next.mutable_data<T>()[0] = static_cast<T>(host.data<T>()[0] + static_cast<T>(step));
  });
  PutOnPlace(std::move(next), ctx.Output("Out"), ctx.place());
}

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
