// The operand checks, dims and output shapes of mul and matmul
// (mul_matmul_operands.h).
#include "ops/math/mul_matmul_operands.h"

namespace rill {
namespace {

Matrix2d Flatten(const Shape& shape, int num_col_dims) {
  const int rank = static_cast<int>(shape.size());
  return {DimProduct(shape, 0, num_col_dims), DimProduct(shape, num_col_dims, rank)};
}

void CheckSameType(const Tensor& x, const Tensor& y) {
  RILL_CHECK(x.dtype() == y.dtype(), kInvalidArgument, "X is ", x.Describe(), " but Y is ",
             y.Describe());
}

MatmulOperands ReadMatmul(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
  MatmulOperands op;
  op.tx = ctx.Attr<bool>("transpose_X");
  op.ty = ctx.Attr<bool>("transpose_Y");
  op.alpha = ctx.Attr<float>("alpha");
  op.d = ResolveMatmulDims(x.shape(), y.shape(), op.tx, op.ty);
  op.out_shape = MatmulOutShape(op.d);
  return op;
}

}  // namespace

void CheckFlattenDims(const Shape& shape, int num_col_dims, const char* slot, const char* attr) {
  RILL_CHECK(num_col_dims >= 1 && num_col_dims < static_cast<int>(shape.size()), kInvalidArgument,
             attr, " = ", num_col_dims, " must be in [1, rank of ", slot, "), ", slot,
             " has shape ", ShapeToString(shape));
}

Shape MulOutShape(const Shape& x, int x_dims, const Shape& y, int y_dims) {
  Shape out(x.begin(), x.begin() + x_dims);
  out.insert(out.end(), y.begin() + y_dims, y.end());
  return out;
}

MulOperands ResolveMul(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
  const int xn = ctx.Attr<int>("x_num_col_dims");
  const int yn = ctx.Attr<int>("y_num_col_dims");
  CheckFlattenDims(x.shape(), xn, "X", "x_num_col_dims");
  CheckFlattenDims(y.shape(), yn, "Y", "y_num_col_dims");
  MulOperands m{Flatten(x.shape(), xn), Flatten(y.shape(), yn), {}};
  RILL_CHECK(m.x.cols == m.y.rows, kInvalidArgument, "X of shape ", ShapeToString(x.shape()),
             " has ", m.x.cols, " columns but Y of shape ", ShapeToString(y.shape()), " has ",
             m.y.rows, " rows");
  CheckSameType(x, y);
  m.out_shape = MulOutShape(x.shape(), xn, y.shape(), yn);
  return m;
}

MulOperands ResolveMulGrad(const KernelContext& ctx, const Tensor& x, const Tensor& y,
                           bool has_dout) {
  const MulOperands m = ResolveMul(ctx, x, y);
  if (has_dout) {
    const Tensor& d = ctx.Input("Out@GRAD");
    RILL_CHECK(d.numel() == m.x.rows * m.y.cols && d.dtype() == x.dtype(), kInvalidArgument,
               "Out@GRAD is ", d.Describe(), " but the product is [", m.x.rows, ", ", m.y.cols,
               "] of ", DataTypeName(x.dtype()));
  }
  return m;
}

MatmulDims ResolveMatmulDims(const Shape& x, const Shape& y, bool tx, bool ty) {
  RILL_CHECK(x.size() >= 2 && y.size() >= 2, kInvalidArgument,
             "matmul needs X and Y of rank >= 2, X has shape ", ShapeToString(x), ", Y ",
             ShapeToString(y));
  MatmulDims d;
  const size_t xr = x.size();
  const size_t yr = y.size();
  d.m = tx ? x[xr - 1] : x[xr - 2];
  d.k = tx ? x[xr - 2] : x[xr - 1];
  const int64_t yk = ty ? y[yr - 1] : y[yr - 2];
  d.n = ty ? y[yr - 2] : y[yr - 1];
  RILL_CHECK(d.k < 0 || yk < 0 || d.k == yk, kInvalidArgument, "inner dims differ: op(X) of X ",
             ShapeToString(x), " has ", d.k, " columns, op(Y) of Y ", ShapeToString(y), " has ", yk,
             " rows");
  d.batch = MatmulBatch(x, y);
  return d;
}

Shape MatmulOutShape(const MatmulDims& d) {
  Shape out = d.batch.out_dims();
  out.push_back(d.m);
  out.push_back(d.n);
  return out;
}

MatmulOperands ResolveMatmul(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
  CheckSameType(x, y);
  return ReadMatmul(ctx, x, y);
}

MatmulOperands ResolveMatmulGrad(const KernelContext& ctx, const Tensor& x, const Tensor& y,
                                 bool has_dout) {
  const MatmulOperands op = ReadMatmul(ctx, x, y);
  if (has_dout) {
    const Tensor& g = ctx.Input("Out@GRAD");
    RILL_CHECK(g.shape() == op.out_shape && g.dtype() == x.dtype(), kInvalidArgument,
               "Out@GRAD is ", g.Describe(), " but Out is ", DataTypeName(x.dtype()),
               ShapeToString(op.out_shape));
  }
  return op;
}

}  // namespace rill
