// mul: the matrix product of X and Y after flattening each to 2-D, as fc
// uses it. X is viewed as [prod(X.dims[:x_num_col_dims]), rest] and Y as
// [prod(Y.dims[:y_num_col_dims]), rest]; Out = X.dims[:x] + Y.dims[y:].
#include <vector>

#include "ops/math/binary_grad.h"
#include "ops/math/blas.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// A tensor seen as a [rows, cols] matrix.
struct Matrix2d {
  int64_t rows = 0;
  int64_t cols = 0;
};

Matrix2d Flatten(const Shape& shape, int num_col_dims) {
  const int rank = static_cast<int>(shape.size());
  return {DimProduct(shape, 0, num_col_dims), DimProduct(shape, num_col_dims, rank)};
}

Shape OutShape(const Shape& x, int x_dims, const Shape& y, int y_dims) {
  Shape out(x.begin(), x.begin() + x_dims);
  out.insert(out.end(), y.begin() + y_dims, y.end());
  return out;
}

// A dim product where -1 (unknown) makes the whole product unknown.
int64_t KnownProduct(const Shape& shape, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) {
    if (shape[i] < 0) return -1;
    p = CheckedMultiply(p, shape[i]);
  }
  return p;
}

void CheckFlattenDims(const Shape& shape, int num_col_dims, const char* slot, const char* attr) {
  RILL_CHECK(num_col_dims >= 1 && num_col_dims < static_cast<int>(shape.size()), kInvalidArgument,
             attr, " = ", num_col_dims, " must be in [1, rank of ", slot, "), ", slot,
             " has shape ", ShapeToString(shape));
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
  ctx.SetOutput("Out", OutShape(x, xn, y, yn), ctx.InputType("X"));
}

// Flattens X and Y at run time and checks that the inner dims agree.
struct MulOperands {
  Matrix2d x;
  Matrix2d y;
};

MulOperands Operands(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
  const int xn = ctx.Attr<int>("x_num_col_dims");
  const int yn = ctx.Attr<int>("y_num_col_dims");
  CheckFlattenDims(x.shape(), xn, "X", "x_num_col_dims");
  CheckFlattenDims(y.shape(), yn, "Y", "y_num_col_dims");
  MulOperands m{Flatten(x.shape(), xn), Flatten(y.shape(), yn)};
  RILL_CHECK(m.x.cols == m.y.rows, kInvalidArgument, "X of shape ", ShapeToString(x.shape()),
             " has ", m.x.cols, " columns but Y of shape ", ShapeToString(y.shape()), " has ",
             m.y.rows, " rows");
  RILL_CHECK(x.dtype() == y.dtype(), kInvalidArgument, "X is ", x.Describe(), " but Y is ",
             y.Describe());
  return m;
}

void MulKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const MulOperands m = Operands(ctx, x, y);
  const Shape out_shape =
      OutShape(x.shape(), ctx.Attr<int>("x_num_col_dims"), y.shape(), ctx.Attr<int>("y_num_col_dims"));
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    T* c = out->Allocate<T>(out_shape);
    Gemm<T>(false, false, m.x.rows, m.y.cols, m.x.cols, T(1), a, b, T(0), c);
  });
}

// X@GRAD = Out@GRAD * Y^T, Y@GRAD = X^T * Out@GRAD (in the flattened views).
void MulGradKernel(KernelContext& ctx) {
  const bool want_dx = ctx.HasOutput("X@GRAD");
  const bool want_dy = ctx.HasOutput("Y@GRAD");
  if (!want_dx && !want_dy) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const MulOperands m = Operands(ctx, x, y);
  const bool has_dout = ctx.InputReady("Out@GRAD");
  if (has_dout) {
    const Tensor& d = ctx.Input("Out@GRAD");
    RILL_CHECK(d.numel() == m.x.rows * m.y.cols && d.dtype() == x.dtype(), kInvalidArgument,
               "Out@GRAD is ", d.Describe(), " but the product is [", m.x.rows, ", ", m.y.cols,
               "] of ", DataTypeName(x.dtype()));
  }
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    const T* dout = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const Shape x_shape = x.shape();
    const Shape y_shape = y.shape();
    if (want_dx) {
      Tensor* dx_t = ctx.Output("X@GRAD");
      T* dx = dx_t->Allocate<T>(x_shape);
      if (dout) {
        Gemm<T>(false, true, m.x.rows, m.x.cols, m.y.cols, T(1), dout, b, T(0), dx);
      } else {
        dx_t->Fill(0);
      }
    }
    if (want_dy) {
      Tensor* dy_t = ctx.Output("Y@GRAD");
      T* dy = dy_t->Allocate<T>(y_shape);
      if (dout) {
        Gemm<T>(true, false, m.y.rows, m.y.cols, m.x.rows, T(1), a, dout, T(0), dy);
      } else {
        dy_t->Fill(0);
      }
    }
  });
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
                                           .Output("Out", "X.dims[:x_num_col_dims] + "
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
