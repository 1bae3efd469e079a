// matmul: Out = alpha * op(X) * op(Y), op() transposing the last two dims when
// asked. X and Y are matrices (rank 2) or batches of matrices whose batch dims
// broadcast as numpy's matmul (matmul_batch.h): [B, H, T, D] x [B, H, D, T],
// [B, T, D] x [D, E], [B, 1, T, D] x [B, H, D, T].
#include <algorithm>
#include <vector>

#include "ops/math/binary_grad.h"
#include "ops/math/blas.h"
#include "ops/math/mul_matmul_operands.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/parallel_for.h"

namespace rill {
namespace {

void MatmulShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& y = ctx.InputShape("Y");
  ctx.Check(ctx.InputType("X") == ctx.InputType("Y"), "X is ", DataTypeName(ctx.InputType("X")),
            " but Y is ", DataTypeName(ctx.InputType("Y")), ": types differ");
  const MatmulDims d =
      ResolveMatmulDims(x, y, ctx.Attr<bool>("transpose_X"), ctx.Attr<bool>("transpose_Y"));
  ctx.SetOutput("Out", MatmulOutShape(d), ctx.InputType("X"));
}

// Products per ParallelFor part: about a quarter of a million multiply-adds.
// Each product is its own GEMM call, so any grouping gives the same bits.
int64_t ProductsPerPart(const MatmulDims& d) {
  const int64_t work = std::max<int64_t>(1, d.m * d.n * d.k);
  return std::max<int64_t>(1, (int64_t{1} << 18) / work);
}

// Runs product(i) for each product of the batch: in parts when the products
// write disjoint outputs, in order when a broadcast matrix sums the gradients
// of several (`reused`); not at all without an output gradient (`any`).
template <class F>
void ForProducts(const MatmulDims& d, bool reused, bool any, const F& product) {
  if (!any) return;
  if (reused) {
    for (int64_t i = 0; i < d.batch.count(); ++i) product(i);
    return;
  }
  ParallelRanges(d.batch.count(), ProductsPerPart(d), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) product(i);
  });
}

void MatmulKernel(KernelContext& ctx) {
  const auto product = []<class T>(const MatmulOperands& op, const T* a, const T* b, Tensor* out) {
    const MatmulDims& d = op.d;
    T* c = out->Allocate<T>(op.out_shape);
    ForProducts(d, /*reused=*/false, /*any=*/true, [&](int64_t i) {
      Gemm<T>(op.tx, op.ty, d.m, d.n, d.k, static_cast<T>(op.alpha), a + d.x_offset(i),
              b + d.y_offset(i), T(0), c + i * d.out_size());
    });
  };
  RunGemm(ctx, ResolveMatmul, product);
}

// Per product, with dO = Out@GRAD and a = alpha:
//   X@GRAD = a dO op(Y)^T, laid out as X (transposed back when transpose_X),
//   Y@GRAD = a op(X)^T dO, laid out as Y.
// A matrix of X (Y) read by several products (a broadcast batch dim) gets the
// sum of their gradients, added in product order onto zeros.
void MatmulGradKernel(KernelContext& ctx) {
  const auto grads = []<class T>(const MatmulOperands& op, const GemmGradIo<T>& io) {
    const MatmulDims& d = op.d;
    const T a = static_cast<T>(op.alpha);
    if (Tensor* dx_t = io.dx) {
      T* dx = dx_t->Allocate<T>(io.x_shape);
      if (!io.dout || d.batch.x_reused()) dx_t->Fill(0);
      const T beta = d.batch.x_reused() ? T(1) : T(0);
      ForProducts(d, d.batch.x_reused(), io.dout != nullptr, [&](int64_t i) {
        const T* gi = io.dout + i * d.out_size();
        const T* yi = io.y + d.y_offset(i);
        T* dxi = dx + d.x_offset(i);
        if (!op.tx) {  // dX [M, K] = dO [M, N] op(Y)^T
          Gemm<T>(false, !op.ty, d.m, d.k, d.n, a, gi, yi, beta, dxi);
        } else {  // dX [K, M] = op(Y) [K, N] dO^T
          Gemm<T>(op.ty, true, d.k, d.m, d.n, a, yi, gi, beta, dxi);
        }
      });
    }
    if (Tensor* dy_t = io.dy) {
      T* dy = dy_t->Allocate<T>(io.y_shape);
      if (!io.dout || d.batch.y_reused()) dy_t->Fill(0);
      const T beta = d.batch.y_reused() ? T(1) : T(0);
      ForProducts(d, d.batch.y_reused(), io.dout != nullptr, [&](int64_t i) {
        const T* gi = io.dout + i * d.out_size();
        const T* xi = io.x + d.x_offset(i);
        T* dyi = dy + d.y_offset(i);
        if (!op.ty) {  // dY [K, N] = op(X)^T [K, M] dO
          Gemm<T>(!op.tx, false, d.k, d.n, d.m, a, xi, gi, beta, dyi);
        } else {  // dY [N, K] = dO^T op(X)
          Gemm<T>(true, op.tx, d.n, d.k, d.m, a, gi, xi, beta, dyi);
        }
      });
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
                                             .Input("X", "[..., M, K] (before transpose)")
                                             .Input("Y", "[..., K, N] (before transpose)")
                                             .Output("Out",
                                                     "[..., M, N], the batch dims "
                                                     "broadcast"))
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
