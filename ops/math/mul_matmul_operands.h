// The operands of mul and matmul as their CPU kernels (mul_op.cc,
// matmul_op.cc) and CUDA kernels (gemm_op_cuda.cc) all see them: the
// attributes read, the inputs checked (one order, one wording), the GEMMs'
// dims, batch layout and output shape worked out, and the gradient kernels'
// inputs and outputs taken. Host code only.
#pragma once

#include <cstdint>

#include "ops/math/matmul_batch.h"
#include "rill/kernel_context.h"

namespace rill {

// -- mul ----------------------------------------------------------------------
// X is viewed as [prod(X.dims[:x_num_col_dims]), rest], Y likewise;
// Out = X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:].

// A tensor seen as a [rows, cols] matrix.
struct Matrix2d {
  int64_t rows = 0;
  int64_t cols = 0;
};

// Throws kInvalidArgument unless 1 <= num_col_dims < rank of `shape` (the
// tensor of slot `slot`, flattened by attribute `attr`).
void CheckFlattenDims(const Shape& shape, int num_col_dims, const char* slot, const char* attr);

// X.dims[:x_dims] + Y.dims[y_dims:].
Shape MulOutShape(const Shape& x, int x_dims, const Shape& y, int y_dims);

struct MulOperands {
  Matrix2d x;
  Matrix2d y;
  Shape out_shape;
};

// Reads x_num_col_dims and y_num_col_dims and checks them, then that X's
// columns are Y's rows, then that X and Y have one type.
MulOperands ResolveMul(const KernelContext& ctx, const Tensor& x, const Tensor& y);

// ResolveMul, then, when has_dout, that Out@GRAD holds the product's
// elements in X's type.
MulOperands ResolveMulGrad(const KernelContext& ctx, const Tensor& x, const Tensor& y,
                           bool has_dout);

// -- matmul -------------------------------------------------------------------
// Batches of op(X) [M, K] x op(Y) [K, N]: X and Y have rank >= 2, their
// leading (batch) dims broadcast as numpy's matmul does (matmul_batch.h), so
// a rank-2 Y is shared by every matrix of a batched X and [B, 1, T, D] meets
// [B, H, D, T] once for each of the H heads.

struct MatmulDims {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  MatmulBatch batch;

  // Elements in one matrix of X, Y and Out.
  int64_t x_size() const { return m * k; }
  int64_t y_size() const { return k * n; }
  int64_t out_size() const { return m * n; }
  // Where product i's matrices of X and Y start (elements).
  int64_t x_offset(int64_t i) const { return batch.XMatrix(i) * x_size(); }
  int64_t y_offset(int64_t i) const { return batch.YMatrix(i) * y_size(); }
};

// Works on declared shapes too: -1 dims are unknown and never fail a check.
MatmulDims ResolveMatmulDims(const Shape& x, const Shape& y, bool tx, bool ty);

// Out's batch dims followed by [M, N].
Shape MatmulOutShape(const MatmulDims& d);

struct MatmulOperands {
  bool tx = false;  // transpose_X
  bool ty = false;  // transpose_Y
  float alpha = 1;
  MatmulDims d;
  Shape out_shape;
};

// Checks that X and Y have one type, then reads the attributes and resolves
// the dims.
MatmulOperands ResolveMatmul(const KernelContext& ctx, const Tensor& x, const Tensor& y);

// Reads the attributes and resolves the dims, then, when has_dout, checks
// that Out@GRAD has Out's shape and X's type.
MatmulOperands ResolveMatmulGrad(const KernelContext& ctx, const Tensor& x, const Tensor& y,
                                 bool has_dout);

// -- the kernels' frames --------------------------------------------------------

// The frame of mul's and matmul's kernels: op = resolve(ctx, X, Y)
// (ResolveMul, ResolveMatmul) checks the operands, then body(op, x, y, out)
// runs with x and y X's and Y's data of their float type.
template <class Resolve, class Body>
void RunGemm(KernelContext& ctx, Resolve resolve, Body body) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const auto op = resolve(ctx, x, y);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    body(op, a, b, out);
  });
}

// A gradient kernel's typed inputs, taken before any output is allocated (an
// output may share an input's variable), and its outputs.
template <class T>
struct GemmGradIo {
  const T* x = nullptr;
  const T* y = nullptr;
  const T* dout = nullptr;  // Out@GRAD; null when missing (it reads as zero)
  Shape x_shape;
  Shape y_shape;
  Tensor* dx = nullptr;  // X@GRAD; null when unbound
  Tensor* dy = nullptr;  // Y@GRAD; null when unbound
};

// The frame of mul_grad's and matmul_grad's kernels: nothing when neither
// X@GRAD nor Y@GRAD is bound; else op = resolve(ctx, X, Y, has_dout)
// (ResolveMulGrad, ResolveMatmulGrad) checks the operands and body(op, io)
// runs with io a GemmGradIo<T> of X's float type T.
template <class Resolve, class Body>
void RunGemmGrad(KernelContext& ctx, Resolve resolve, Body body) {
  const bool want_dx = ctx.HasOutput("X@GRAD");
  const bool want_dy = ctx.HasOutput("Y@GRAD");
  if (!want_dx && !want_dy) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const bool has_dout = ctx.InputReady("Out@GRAD");
  const auto op = resolve(ctx, x, y, has_dout);
  VisitFloatType(x.dtype(), [&]<class T>() {
    GemmGradIo<T> io;
    io.x = x.data<T>();
    io.y = y.data<T>();
    io.dout = has_dout ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    io.x_shape = x.shape();
    io.y_shape = y.shape();
    io.dx = want_dx ? ctx.Output("X@GRAD") : nullptr;
    io.dy = want_dy ? ctx.Output("Y@GRAD") : nullptr;
    body(op, io);
  });
}

}  // namespace rill
