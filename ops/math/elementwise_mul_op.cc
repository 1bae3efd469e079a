// elementwise_mul: Out = X * Y, Y broadcast against X (see elementwise.h).
//
// As in Fluid, X may hold selected rows (a sparse gradient) when Y holds one
// element: Out is then selected rows too, X's rows with each value times Y
// (gradient clipping scales a sparse gradient so). Out may be X.
#include <vector>

#include "ops/math/elementwise.h"
#include "rill/op_registry.h"
#include "rill/selected_rows.h"

namespace rill {
namespace {

void SparseElementwiseMulKernel(KernelContext& ctx) {
  const SelectedRows& x = ctx.InputRows("X");
  const Tensor& y_t = ctx.Input("Y");
  RILL_CHECK(x.initialized(), kInvalidArgument, "input X (", ctx.InputName("X"),
             ") holds selected rows without a value");
  RILL_CHECK(y_t.numel() == 1, kInvalidArgument, "X (", ctx.InputName("X"),
             ") holds selected rows, so Y must hold one element; Y is ", y_t.Describe());
  RILL_CHECK(x.value.dtype() == y_t.dtype(), kInvalidArgument, "X is selected rows of ",
             x.value.Describe(), " but Y is ", y_t.Describe(), ": types differ");
  // The values are written to a new buffer, never into X's: the actor
  // executor hands every place of an allreduce the same merged rows.
  Tensor scaled(x.value.dtype(), x.value.shape());
  VisitFloatType(y_t.dtype(), [&]<class T>() {
    const T y = y_t.data<T>()[0];
    const T* in = x.value.data<T>();
    T* v = scaled.mutable_data<T>();
    const int64_t n = scaled.numel();
    for (int64_t i = 0; i < n; ++i) v[i] = in[i] * y;
  });
  std::vector<int64_t> rows = x.rows;
  const int64_t height = x.height;
  SelectedRows* out = ctx.OutputRows("Out");  // may be X
  out->rows = std::move(rows);
  out->height = height;
  out->value = std::move(scaled);
}

void ElementwiseMulKernel(KernelContext& ctx) {
  if (ctx.InputIsSelectedRows("X")) {
    SparseElementwiseMulKernel(ctx);
    return;
  }
  ElementwiseForward(ctx, [](auto x, auto y) { return x * y; });
}

// dX = dOut * Y, dY = sum of dOut * X over the broadcast dims.
void ElementwiseMulGradKernel(KernelContext& ctx) {
  ElementwiseBackward(
      ctx, [](auto, auto y, auto dout) { return dout * y; },
      [](auto x, auto, auto dout) { return dout * x; });
}

}  // namespace

RILL_REGISTER_OP(elementwise_mul,
                 ElementwiseSchema("elementwise_mul", "Out = X * Y", ElementwiseMulKernel));
RILL_REGISTER_OP(elementwise_mul_grad,
                 ElementwiseGradSchema("elementwise_mul", "Out = X * Y", ElementwiseMulGradKernel));

}  // namespace rill
