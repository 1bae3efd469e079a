// squared_l2_norm: Out [1] = the sum of X's squared elements (gradient
// clipping by global norm sums these over every gradient).
//
// X may hold selected rows (a sparse gradient): Out is then the squared norm
// of the dense tensor they stand for, so repeated rows are merged (their
// values summed) before squaring — (a + b)^2, not a^2 + b^2. The merged rows
// are summed in increasing row order, the order the dense loop meets them, so
// the result has the bits of squared_l2_norm on the dense equivalent.
#include "ops/math/reduce_to_one.h"
#include "rill/op_registry.h"
#include "rill/selected_rows.h"

namespace rill {
namespace {

void SparseSquaredL2NormKernel(KernelContext& ctx) {
  const SelectedRows merged = ctx.InputRows("X").Merged();
  Tensor* out = ctx.Output("Out");
  VisitFloatType(merged.value.dtype(), [&]<class T>() {
    const T* in = merged.value.data<T>();
    const int64_t n = merged.value.numel();
    T sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += in[i] * in[i];
    out->Allocate<T>({1})[0] = sum;
  });
}

void SquaredL2NormKernel(KernelContext& ctx) {
  if (ctx.InputIsSelectedRows("X")) {
    SparseSquaredL2NormKernel(ctx);
    return;
  }
  ReduceToOneForward(
      ctx, [](auto x) { return x * x; }, [](auto sum, int64_t) { return sum; });
}

// X@GRAD = 2 X Out@GRAD.
void SquaredL2NormGradKernel(KernelContext& ctx) {
  ReduceToOneBackward(ctx, [](auto x, auto dout, int64_t) { return 2 * dout * x; });
}

}  // namespace

RILL_REGISTER_OP(squared_l2_norm, OpSchema("squared_l2_norm")
                                      .Doc("Out [1] = sum of X's elements squared.")
                                      .Input("X",
                                             "input tensor, or selected rows (repeats merged "
                                             "before squaring)")
                                      .Output("Out", "[1], X's type")
                                      .InferShape(ReduceToOneShape)
                                      .CpuKernel(SquaredL2NormKernel)
                                      .DefaultGrad());

RILL_REGISTER_OP(squared_l2_norm_grad,
                 OpSchema("squared_l2_norm_grad")
                     .Doc("X@GRAD = 2 X Out@GRAD.")
                     .Input("X", "the forward X")
                     .Input("Out", "the forward Out (unused)", kOptional)
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .InferShape(ReduceToOneGradShape)
                     .CpuKernel(SquaredL2NormGradKernel));

}  // namespace rill
