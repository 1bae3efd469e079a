// assign: Out = a copy of X. Its gradient is an assign of Out@GRAD.
#include <vector>

#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void AssignKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  // CopyFrom keeps Out's buffer when it can and is a no-op when Out is X.
  ctx.Output("Out")->CopyFrom(x);
}

std::vector<proto::OpDesc> AssignGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("assign");
  SetInput(&grad, "X", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "Out", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(assign, OpSchema("assign")
                             .Doc("Out = a copy of X.")
                             .Input("X", "input tensor")
                             .Output("Out", "copy of X, same shape and type")
                             .InferShape(SameShapeAs("X", "Out"))
                             .CpuKernel(AssignKernel)
                             .Grad(AssignGrad));

}  // namespace rill
