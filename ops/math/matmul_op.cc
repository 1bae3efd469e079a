// matmul: Out = alpha * op(X) * op(Y), op() transposing when asked. X and Y
// are matrices (rank 2) or batches of matrices (rank 3, same batch); a rank-2
// Y with a rank-3 X is shared by every matrix of the batch.
#include <vector>

#include "ops/math/binary_grad.h"
#include "ops/math/blas.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// The product's dimensions: B batches of [M, K] x [K, N].
struct MatmulDims {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  bool y_batched = false;
};

// Works on declared shapes too: -1 dims are unknown and never fail a check.
MatmulDims ResolveDims(const Shape& x, const Shape& y, bool tx, bool ty) {
  RILL_CHECK(x.size() == 2 || x.size() == 3, kInvalidArgument, "X must have rank 2 or 3, has shape ",
             ShapeToString(x));
  RILL_CHECK(y.size() == 2 || y.size() == x.size(), kInvalidArgument, "Y of shape ",
             ShapeToString(y), " must have rank 2 or X's rank ", x.size());
  MatmulDims d;
  const size_t xr = x.size();
  const size_t yr = y.size();
  d.m = tx ? x[xr - 1] : x[xr - 2];
  d.k = tx ? x[xr - 2] : x[xr - 1];
  const int64_t yk = ty ? y[yr - 1] : y[yr - 2];
  d.n = ty ? y[yr - 2] : y[yr - 1];
  RILL_CHECK(d.k < 0 || yk < 0 || d.k == yk, kInvalidArgument, "inner dims differ: op(X) of X ",
             ShapeToString(x), " has ", d.k, " columns, op(Y) of Y ", ShapeToString(y), " has ",
             yk, " rows");
  if (xr == 3) {
    d.batch = x[0];
    d.y_batched = yr == 3;
    RILL_CHECK(!d.y_batched || x[0] < 0 || y[0] < 0 || x[0] == y[0], kInvalidArgument,
               "batch sizes differ: X ", ShapeToString(x), ", Y ", ShapeToString(y));
  }
  return d;
}

Shape OutShape(const Shape& x, const MatmulDims& d) {
  if (x.size() == 3) return {d.batch, d.m, d.n};
  return {d.m, d.n};
}

void MatmulShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& y = ctx.InputShape("Y");
  ctx.Check(ctx.InputType("X") == ctx.InputType("Y"), "X is ", DataTypeName(ctx.InputType("X")),
            " but Y is ", DataTypeName(ctx.InputType("Y")), ": types differ");
  const MatmulDims d =
      ResolveDims(x, y, ctx.Attr<bool>("transpose_X"), ctx.Attr<bool>("transpose_Y"));
  ctx.SetOutput("Out", OutShape(x, d), ctx.InputType("X"));
}

void MatmulKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  RILL_CHECK(x.dtype() == y.dtype(), kInvalidArgument, "X is ", x.Describe(), " but Y is ",
             y.Describe());
  const bool tx = ctx.Attr<bool>("transpose_X");
  const bool ty = ctx.Attr<bool>("transpose_Y");
  const float alpha = ctx.Attr<float>("alpha");
  const MatmulDims d = ResolveDims(x.shape(), y.shape(), tx, ty);
  const Shape out_shape = OutShape(x.shape(), d);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    T* c = out->Allocate<T>(out_shape);
    const int64_t y_step = d.y_batched ? d.k * d.n : 0;
    for (int64_t i = 0; i < d.batch; ++i) {
      Gemm<T>(tx, ty, d.m, d.n, d.k, static_cast<T>(alpha), a + i * d.m * d.k, b + i * y_step,
              T(0), c + i * d.m * d.n);
    }
  });
}

// Per matrix, with dO = Out@GRAD and a = alpha:
//   X@GRAD = a dO op(Y)^T, laid out as X (transposed back when transpose_X),
//   Y@GRAD = a op(X)^T dO, laid out as Y; summed over the batch when Y is shared.
void MatmulGradKernel(KernelContext& ctx) {
  const bool want_dx = ctx.HasOutput("X@GRAD");
  const bool want_dy = ctx.HasOutput("Y@GRAD");
  if (!want_dx && !want_dy) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const bool tx = ctx.Attr<bool>("transpose_X");
  const bool ty = ctx.Attr<bool>("transpose_Y");
  const float alpha = ctx.Attr<float>("alpha");
  const MatmulDims d = ResolveDims(x.shape(), y.shape(), tx, ty);
  const bool has_dout = ctx.InputReady("Out@GRAD");
  if (has_dout) {
    const Tensor& g = ctx.Input("Out@GRAD");
    RILL_CHECK(g.shape() == OutShape(x.shape(), d) && g.dtype() == x.dtype(), kInvalidArgument,
               "Out@GRAD is ", g.Describe(), " but Out is ", DataTypeName(x.dtype()),
               ShapeToString(OutShape(x.shape(), d)));
  }
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    const T* g = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const T a = static_cast<T>(alpha);
    const Shape x_shape = x.shape();
    const Shape y_shape = y.shape();
    const int64_t x_step = d.m * d.k;
    const int64_t y_step = d.y_batched ? d.k * d.n : 0;
    const int64_t g_step = d.m * d.n;
    if (want_dx) {
      Tensor* dx_t = ctx.Output("X@GRAD");
      T* dx = dx_t->Allocate<T>(x_shape);
      if (!g) dx_t->Fill(0);
      for (int64_t i = 0; g && i < d.batch; ++i) {
        const T* gi = g + i * g_step;
        const T* yi = yp + i * y_step;
        T* dxi = dx + i * x_step;
        if (!tx) {  // dX [M, K] = dO [M, N] op(Y)^T
          Gemm<T>(false, !ty, d.m, d.k, d.n, a, gi, yi, T(0), dxi);
        } else {  // dX [K, M] = op(Y) [K, N] dO^T
          Gemm<T>(ty, true, d.k, d.m, d.n, a, yi, gi, T(0), dxi);
        }
      }
    }
    if (want_dy) {
      Tensor* dy_t = ctx.Output("Y@GRAD");
      T* dy = dy_t->Allocate<T>(y_shape);
      if (!g || !d.y_batched) dy_t->Fill(0);
      for (int64_t i = 0; g && i < d.batch; ++i) {
        const T* gi = g + i * g_step;
        const T* xi = xp + i * x_step;
        T* dyi = dy + i * y_step;
        const T beta = d.y_batched ? T(0) : T(1);  // a shared Y sums over the batch
        if (!ty) {  // dY [K, N] = op(X)^T [K, M] dO
          Gemm<T>(!tx, false, d.k, d.n, d.m, a, xi, gi, beta, dyi);
        } else {  // dY [N, K] = dO^T op(X)
          Gemm<T>(true, tx, d.n, d.k, d.m, a, gi, xi, beta, dyi);
        }
      }
    }
  });
}

void MatmulGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
  ctx.SetOutput("Y@GRAD", ctx.InputShape("Y"), ctx.InputType("Y"));
}

OpSchema WithMatmulAttrs(OpSchema schema) {
  schema.Attr("transpose_X", false, "use X^T (the last two dims swapped)")
      .Attr("transpose_Y", false, "use Y^T (the last two dims swapped)")
      .Attr("alpha", 1.0f, "scales the product");
  return schema;
}

}  // namespace

RILL_REGISTER_OP(matmul, WithMatmulAttrs(OpSchema("matmul")
                                             .Doc("Out = alpha * op(X) op(Y) for matrices or "
                                                  "batches of matrices (OpenBLAS GEMM).")
                                             .Input("X", "[M, K] or [B, M, K] (before transpose)")
                                             .Input("Y", "[K, N] or [B, K, N] (before transpose)")
                                             .Output("Out", "[M, N] or [B, M, N]"))
                             .InferShape(MatmulShape)
                             .CpuKernel(MatmulKernel)
                             .Grad(BinaryGradMaker("matmul_grad", /*one_op_per_input=*/true)));

RILL_REGISTER_OP(matmul_grad,
                 WithMatmulAttrs(OpSchema("matmul_grad")
                                     .Doc("Gradients of matmul with respect to X and Y.")
                                     .Input("X", "the forward X")
                                     .Input("Y", "the forward Y")
                                     .Input("Out@GRAD", "gradient of Out; absent means zero",
                                            kOptional)
                                     .Output("X@GRAD", "gradient of X", kOptional)
                                     .Output("Y@GRAD", "gradient of Y", kOptional))
                     .InferShape(MatmulGradShape)
                     .CpuKernel(MatmulGradKernel));

}  // namespace rill
