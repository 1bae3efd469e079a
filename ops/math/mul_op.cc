// mul: the matrix product of X and Y after flattening each to 2-D, as fc
// uses it. X is viewed as [prod(X.dims[:x_num_col_dims]), rest] and Y as
// [prod(Y.dims[:y_num_col_dims]), rest]; Out = X.dims[:x] + Y.dims[y:].
#include <vector>

#include "ops/math/binary_grad.h"
#include "ops/math/blas.h"
#include "ops/math/mul_matmul_operands.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

// A dim product where -1 (unknown) makes the whole product unknown.
int64_t KnownProduct(const Shape& shape, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) {
    if (shape[i] < 0) return -1;
    p = CheckedMultiply(p, shape[i]);
  }
  return p;
}

void MulShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const Shape& y = ctx.InputShape("Y");
  const int xn = ctx.Attr<int>("x_num_col_dims");
  const int yn = ctx.Attr<int>("y_num_col_dims");
  CheckFlattenDims(x, xn, "X", "x_num_col_dims");
  CheckFlattenDims(y, yn, "Y", "y_num_col_dims");
  ctx.Check(ctx.InputType("X") == ctx.InputType("Y"), "X is ", DataTypeName(ctx.InputType("X")),
            " but Y is ", DataTypeName(ctx.InputType("Y")), ": types differ");
  const int64_t xk = KnownProduct(x, xn, static_cast<int>(x.size()));
  const int64_t yk = KnownProduct(y, 0, yn);
  ctx.Check(xk < 0 || yk < 0 || xk == yk, "X of shape ", ShapeToString(x), " flattened at ", xn,
            " has ", xk, " columns but Y of shape ", ShapeToString(y), " flattened at ", yn,
            " has ", yk, " rows");
  ctx.SetOutput("Out", MulOutShape(x, xn, y, yn), ctx.InputType("X"));
}

void MulKernel(KernelContext& ctx) {
  const auto product = []<class T>(const MulOperands& m, const T* a, const T* b, Tensor* out) {
    T* c = out->Allocate<T>(m.out_shape);
    GemmParts<T>(false, false, m.x.rows, m.y.cols, m.x.cols, a, b, c);
  };
  RunGemm(ctx, ResolveMul, product);
}

// X@GRAD = Out@GRAD * Y^T, Y@GRAD = X^T * Out@GRAD (in the flattened views).
void MulGradKernel(KernelContext& ctx) {
  const auto grads = []<class T>(const MulOperands& m, const GemmGradIo<T>& io) {
    if (Tensor* dx_t = io.dx) {
      T* dx = dx_t->Allocate<T>(io.x_shape);
      if (io.dout) {
        GemmParts<T>(false, true, m.x.rows, m.x.cols, m.y.cols, io.dout, io.y, dx);
      } else {
        dx_t->Fill(0);
      }
    }
    if (Tensor* dy_t = io.dy) {
      T* dy = dy_t->Allocate<T>(io.y_shape);
      if (io.dout) {
        GemmParts<T>(true, false, m.y.rows, m.y.cols, m.x.rows, io.x, io.dout, dy);
      } else {
        dy_t->Fill(0);
      }
    }
  };
  RunGemmGrad(ctx, ResolveMulGrad, grads);
}

void MulGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
  ctx.SetOutput("Y@GRAD", ctx.InputShape("Y"), ctx.InputType("Y"));
}

OpSchema WithFlattenAttrs(OpSchema schema) {
  schema.Attr("x_num_col_dims", 1, "X is flattened to 2-D before this dim", AtLeast(1))
      .Attr("y_num_col_dims", 1, "Y is flattened to 2-D before this dim", AtLeast(1));
  return schema;
}

}  // namespace

RILL_REGISTER_OP(mul, WithFlattenAttrs(OpSchema("mul")
                                           .Doc("Matrix product of X and Y flattened to 2-D "
                                                "(OpenBLAS GEMM).")
                                           .Input("X", "left operand")
                                           .Input("Y", "right operand")
                                           .Output("Out",
                                                   "X.dims[:x_num_col_dims] + "
                                                   "Y.dims[y_num_col_dims:]"))
                          .InferShape(MulShape)
                          .CpuKernel(MulKernel)
                          .Grad(BinaryGradMaker("mul_grad", /*one_op_per_input=*/true)));

RILL_REGISTER_OP(mul_grad,
                 WithFlattenAttrs(OpSchema("mul_grad")
                                      .Doc("Gradients of mul: X@GRAD = Out@GRAD Y^T, "
                                           "Y@GRAD = X^T Out@GRAD.")
                                      .Input("X", "the forward X")
                                      .Input("Y", "the forward Y")
                                      .Input("Out@GRAD", "gradient of Out; absent means zero",
                                             kOptional)
                                      .Output("X@GRAD", "gradient of X", kOptional)
                                      .Output("Y@GRAD", "gradient of Y", kOptional))
                     .InferShape(MulGradShape)
                     .CpuKernel(MulGradKernel));

}  // namespace rill
