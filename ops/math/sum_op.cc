// sum: Out = X[0] + X[1] + ... for any number of same-shaped inputs. Out may
// be one of the inputs: that is how append_backward accumulates a gradient
// in place.
#include <vector>

#include "ops/math/sum.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SumKernel(KernelContext& ctx) {
  SumFrame(ctx, Place::Cpu(),
           [&]<class T>(const std::vector<const T*>& xs, int in_place, T* out, int64_t n) {
             // Out is one of the inputs (in_place >= 0): accumulate into it.
             if (in_place < 0) {
               for (int64_t e = 0; e < n; ++e) out[e] = xs[0][e];
             }
             for (int i = 0; i < static_cast<int>(xs.size()); ++i) {
               if (i == in_place || (in_place < 0 && i == 0)) continue;
               const T* x = xs[i];
               for (int64_t e = 0; e < n; ++e) out[e] += x[e];
             }
           });
}

void SumShape(ShapeContext& ctx) {
  const int count = ctx.InputCount("X");
  ctx.Check(count >= 1, "sum needs at least one input in X");
  const Shape& first = ctx.InputShape("X", 0);
  for (int i = 1; i < count; ++i) {
    const Shape& s = ctx.InputShape("X", i);
    ctx.Check(ShapesCompatible(first, s), "input ", i, " (", ctx.InputName("X", i), ") has shape ",
              ShapeToString(s), " but input 0 (", ctx.InputName("X", 0), ") has shape ",
              ShapeToString(first));
    ctx.Check(ctx.InputType("X", i) == ctx.InputType("X", 0), "input ", i, " (",
              ctx.InputName("X", i), ") is ", DataTypeName(ctx.InputType("X", i)),
              " but input 0 is ", DataTypeName(ctx.InputType("X", 0)));
  }
  ctx.SetOutput("Out", first, ctx.InputType("X", 0));
}

// Every input's gradient is Out@GRAD: one assign per input.
std::vector<proto::OpDesc> SumGrad(const proto::OpDesc& fwd) {
  std::vector<proto::OpDesc> grads;
  const std::string dout = GradVarName(OutputVar(fwd, "Out"));
  for (const std::string& x : InputVars(fwd, "X")) {
    proto::OpDesc grad;
    grad.set_type("assign");
    SetInput(&grad, "X", {dout});
    SetOutput(&grad, "Out", {GradVarName(x)});
    grads.push_back(std::move(grad));
  }
  return grads;
}

}  // namespace

RILL_REGISTER_OP(sum, OpSchema("sum")
                          .Doc("Out = the elementwise sum of every tensor in X.")
                          .Input("X", "one or more tensors of the same shape and type", kDuplicable)
                          .Output("Out", "the sum; may be one of the X (accumulates in place)")
                          .InferShape(SumShape)
                          .CpuKernel(SumKernel)
                          .Grad(SumGrad));

}  // namespace rill
