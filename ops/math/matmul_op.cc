// matmul: Out = alpha * op(X) * op(Y), op() transposing when asked. X and Y
// are matrices (rank 2) or batches of matrices (rank 3, same batch); a rank-2
// Y with a rank-3 X is shared by every matrix of the batch.
#include <vector>

#include "ops/math/binary_grad.h"
#include "ops/math/blas.h"
#include "ops/math/mul_matmul_operands.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void MatmulShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& y = ctx.InputShape("Y");
  ctx.Check(ctx.InputType("X") == ctx.InputType("Y"), "X is ", DataTypeName(ctx.InputType("X")),
            " but Y is ", DataTypeName(ctx.InputType("Y")), ": types differ");
  const MatmulDims d =
      ResolveMatmulDims(x, y, ctx.Attr<bool>("transpose_X"), ctx.Attr<bool>("transpose_Y"));
  ctx.SetOutput("Out", MatmulOutShape(x, d), ctx.InputType("X"));
}

void MatmulKernel(KernelContext& ctx) {
  const auto product = []<class T>(const MatmulOperands& op, const T* a, const T* b, Tensor* out) {
    const MatmulDims& d = op.d;
    T* c = out->Allocate<T>(op.out_shape);
    for (int64_t i = 0; i < d.batch; ++i) {
      Gemm<T>(op.tx, op.ty, d.m, d.n, d.k, static_cast<T>(op.alpha), a + i * d.x_step(),
              b + i * d.y_step(), T(0), c + i * d.out_step());
    }
  };
  RunGemm(ctx, ResolveMatmul, product);
}

// Per matrix, with dO = Out@GRAD and a = alpha:
//   X@GRAD = a dO op(Y)^T, laid out as X (transposed back when transpose_X),
//   Y@GRAD = a op(X)^T dO, laid out as Y; summed over the batch when Y is shared.
void MatmulGradKernel(KernelContext& ctx) {
  const auto grads = []<class T>(const MatmulOperands& op, const GemmGradIo<T>& io) {
    const MatmulDims& d = op.d;
    const T a = static_cast<T>(op.alpha);
    if (Tensor* dx_t = io.dx) {
      T* dx = dx_t->Allocate<T>(io.x_shape);
      if (!io.dout) dx_t->Fill(0);
      for (int64_t i = 0; io.dout && i < d.batch; ++i) {
        const T* gi = io.dout + i * d.out_step();
        const T* yi = io.y + i * d.y_step();
        T* dxi = dx + i * d.x_step();
        if (!op.tx) {  // dX [M, K] = dO [M, N] op(Y)^T
          Gemm<T>(false, !op.ty, d.m, d.k, d.n, a, gi, yi, T(0), dxi);
        } else {  // dX [K, M] = op(Y) [K, N] dO^T
          Gemm<T>(op.ty, true, d.k, d.m, d.n, a, yi, gi, T(0), dxi);
        }
      }
    }
    if (Tensor* dy_t = io.dy) {
      T* dy = dy_t->Allocate<T>(io.y_shape);
      if (!io.dout || !d.y_batched) dy_t->Fill(0);
      for (int64_t i = 0; io.dout && i < d.batch; ++i) {
        const T* gi = io.dout + i * d.out_step();
        const T* xi = io.x + i * d.x_step();
        T* dyi = dy + i * d.y_step();
        // A shared Y sums over the batch.
        const T beta = d.y_batched ? T(0) : T(1);
        if (!op.ty) {  // dY [K, N] = op(X)^T [K, M] dO
          Gemm<T>(!op.tx, false, d.k, d.n, d.m, a, xi, gi, beta, dyi);
        } else {  // dY [N, K] = dO^T op(X)
          Gemm<T>(true, op.tx, d.n, d.k, d.m, a, gi, xi, beta, dyi);
        }
      }
    }
  };
  RunGemmGrad(ctx, ResolveMatmulGrad, grads);
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
