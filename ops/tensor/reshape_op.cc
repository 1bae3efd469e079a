// reshape: Out = X with a new shape (sharing X's memory). In `shape`, 0 copies
// X's dim at that index and one -1 is inferred from the element count.
#include <vector>

#include "ops/tensor/shape_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void ReshapeShape(ShapeContext& ctx) {
  ctx.SetOutput("Out", ResolveReshape(ctx.InputShape("X"), ctx.Attr<std::vector<int64_t>>("shape")),
                ctx.InputType("X"));
}

void ReshapeKernel(KernelContext& ctx) { *ctx.Output("Out") = ReshapeView(ctx); }

// X@GRAD = Out@GRAD viewed with X's shape; a missing Out@GRAD means zeros.
void ReshapeGradKernel(KernelContext& ctx) {
  if (Tensor* zeros = ReshapeGradOrZeros(ctx, Place::Cpu())) zeros->Fill(0);
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
