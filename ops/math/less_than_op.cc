// less_than: Out = int32(X < Y), elementwise; Y has X's shape or one element.
// Rill has no bool type: comparisons give int32 0/1 (a while condition).
#include "ops/math/less_than_check.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void LessThanShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& y = ctx.InputShape("Y");
  const bool one = y.size() <= 1 && (y.empty() || y[0] == 1);
  ctx.Check(one || ShapesCompatible(x, y), "Y ", ShapeToString(y), " must have X's shape ",
            ShapeToString(x), " or one element");
  ctx.Check(ctx.InputType("X") == ctx.InputType("Y"), "X and Y must have the same type");
  ctx.SetOutput("Out", x, DataType::kInt32);
}

void LessThanKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  CheckLessThanInputs(x, y);
  int32_t* out = ctx.Output("Out")->Allocate<int32_t>(x.shape());
  const int64_t n = x.numel();
  const bool broadcast = y.numel() == 1;
  // Compared as doubles: exact for float32, int32 and int64 values below 2^53.
  for (int64_t i = 0; i < n; ++i) {
    out[i] = x.GetAsDouble(i) < y.GetAsDouble(broadcast ? 0 : i) ? 1 : 0;
  }
}

}  // namespace

RILL_REGISTER_OP(less_than,
                 OpSchema("less_than")
                     .Doc("Out = X < Y as int32 0/1, elementwise (Y: X's shape or one element).")
                     .Input("X", "left side", kNoGradient)
                     .Input("Y", "right side", kNoGradient)
                     .Output("Out", "int32, X's shape", kNoGradient)
                     .InferShape(LessThanShape)
                     .CpuKernel(LessThanKernel));

}  // namespace rill
