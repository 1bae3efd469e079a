// The CUDA kernels of mul, mul_grad, matmul and matmul_grad: the CPU kernels'
// checks made on the host (mul_op.cc, matmul_op.cc: their order and their
// messages word by word), outputs allocated on the op's device, the products
// queued on the stream the executor is launching on (CudaStream::Current())
// as cuBLAS GEMMs (gemm_cuda.h). float32 and float64 only, as there.
//
// Each GEMM is the CPU kernel's, with the same operands, transposes and
// alpha; only batches are run differently: a matmul whose rank-2 Y is shared
// by a rank-3 X (not transposed) is one GEMM over X seen as [B * M, K] (for
// Y@GRAD the batch sum becomes part of the inner dim), other batches are one
// strided-batched GEMM, and Y@GRAD of a shared Y with transpose_X adds the
// batch's products into Y@GRAD one GEMM at a time, as the CPU does. Unbound
// gradient outputs are not computed; a missing Out@GRAD gives zeros.
#include "ops/math/gemm_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Zeros t's elements on the stream (the CPU kernels' Fill(0)).
void ZeroOnDevice(Tensor* t, const char* what) {
  if (t->numel() == 0) return;
  const cudaError_t status = cudaMemsetAsync(t->raw_data(), 0, t->bytes(), CudaStream::Current());
  if (status != cudaSuccess) CheckCuda(status, StrCat(what, ": cudaMemsetAsync"));
}

// Allocates t as a `shape` tensor of T on `place`; returns its device memory.
template <class T>
T* AllocateOn(Tensor* t, const Shape& shape, Place place) {
  t->Allocate(DataTypeOf<T>(), shape, place);
  return t->mutable_data<T>();
}

// -- mul ----------------------------------------------------------------------
// As mul_op.cc: X viewed as [prod(X.dims[:x_num_col_dims]), rest], Y likewise.

struct Matrix2d {
  int64_t rows = 0;
  int64_t cols = 0;
};

Matrix2d Flatten(const Shape& shape, int num_col_dims) {
  const int rank = static_cast<int>(shape.size());
  return {DimProduct(shape, 0, num_col_dims), DimProduct(shape, num_col_dims, rank)};
}

Shape MulOutShape(const Shape& x, int x_dims, const Shape& y, int y_dims) {
  Shape out(x.begin(), x.begin() + x_dims);
  out.insert(out.end(), y.begin() + y_dims, y.end());
  return out;
}

void CheckFlattenDims(const Shape& shape, int num_col_dims, const char* slot, const char* attr) {
  RILL_CHECK(num_col_dims >= 1 && num_col_dims < static_cast<int>(shape.size()), kInvalidArgument,
             attr, " = ", num_col_dims, " must be in [1, rank of ", slot, "), ", slot,
             " has shape ", ShapeToString(shape));
}

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

void MulCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const MulOperands m = Operands(ctx, x, y);
  const Shape out_shape = MulOutShape(x.shape(), ctx.Attr<int>("x_num_col_dims"), y.shape(),
                                      ctx.Attr<int>("y_num_col_dims"));
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    T* c = AllocateOn<T>(out, out_shape, ctx.place());
    cuda::Gemm<T>(false, false, m.x.rows, m.y.cols, m.x.cols, T(1), a, b, T(0), c,
                  CudaStream::Current(), "mul");
  });
}

// X@GRAD = Out@GRAD * Y^T, Y@GRAD = X^T * Out@GRAD (in the flattened views).
void MulGradCudaKernel(KernelContext& ctx) {
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
    const cudaStream_t stream = CudaStream::Current();
    if (want_dx) {
      Tensor* dx_t = ctx.Output("X@GRAD");
      T* dx = AllocateOn<T>(dx_t, x_shape, ctx.place());
      if (dout) {
        cuda::Gemm<T>(false, true, m.x.rows, m.x.cols, m.y.cols, T(1), dout, b, T(0), dx, stream,
                      "mul_grad (X@GRAD)");
      } else {
        ZeroOnDevice(dx_t, "mul_grad (X@GRAD)");
      }
    }
    if (want_dy) {
      Tensor* dy_t = ctx.Output("Y@GRAD");
      T* dy = AllocateOn<T>(dy_t, y_shape, ctx.place());
      if (dout) {
        cuda::Gemm<T>(true, false, m.y.rows, m.y.cols, m.x.rows, T(1), a, dout, T(0), dy, stream,
                      "mul_grad (Y@GRAD)");
      } else {
        ZeroOnDevice(dy_t, "mul_grad (Y@GRAD)");
      }
    }
  });
}

// -- matmul -------------------------------------------------------------------
// As matmul_op.cc: B batches of [M, K] x [K, N]; a rank-2 Y with a rank-3 X
// is shared by the batch.

struct MatmulDims {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  bool y_batched = false;
};

MatmulDims ResolveDims(const Shape& x, const Shape& y, bool tx, bool ty) {
  RILL_CHECK(x.size() == 2 || x.size() == 3, kInvalidArgument,
             "X must have rank 2 or 3, has shape ", ShapeToString(x));
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
             ShapeToString(x), " has ", d.k, " columns, op(Y) of Y ", ShapeToString(y), " has ", yk,
             " rows");
  if (xr == 3) {
    d.batch = x[0];
    d.y_batched = yr == 3;
    RILL_CHECK(!d.y_batched || x[0] < 0 || y[0] < 0 || x[0] == y[0], kInvalidArgument,
               "batch sizes differ: X ", ShapeToString(x), ", Y ", ShapeToString(y));
  }
  return d;
}

Shape MatmulOutShape(const Shape& x, const MatmulDims& d) {
  if (x.size() == 3) return {d.batch, d.m, d.n};
  return {d.m, d.n};
}

// A shared Y with an untransposed X: the batch's matrices of X (and of Out
// and Out@GRAD) lie one under the other, so the batch is one [B * M, .]
// matrix (also for rank 2, where B is 1).
bool FoldsBatchIntoRows(const MatmulDims& d, bool tx) { return !d.y_batched && !tx; }

void MatmulCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  RILL_CHECK(x.dtype() == y.dtype(), kInvalidArgument, "X is ", x.Describe(), " but Y is ",
             y.Describe());
  const bool tx = ctx.Attr<bool>("transpose_X");
  const bool ty = ctx.Attr<bool>("transpose_Y");
  const float alpha = ctx.Attr<float>("alpha");
  const MatmulDims d = ResolveDims(x.shape(), y.shape(), tx, ty);
  const Shape out_shape = MatmulOutShape(x.shape(), d);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    T* c = AllocateOn<T>(out, out_shape, ctx.place());
    const T al = static_cast<T>(alpha);
    const cudaStream_t stream = CudaStream::Current();
    if (FoldsBatchIntoRows(d, tx)) {
      cuda::Gemm<T>(false, ty, CheckedMultiply(d.batch, d.m), d.n, d.k, al, a, b, T(0), c, stream,
                    "matmul");
    } else {
      const cuda::GemmBatch batch{d.batch, d.m * d.k, d.y_batched ? d.k * d.n : 0};
      cuda::Gemm<T>(tx, ty, d.m, d.n, d.k, al, a, b, T(0), c, stream, "matmul", batch);
    }
  });
}

// Per matrix, with dO = Out@GRAD and a = alpha:
//   X@GRAD = a dO op(Y)^T, laid out as X (transposed back when transpose_X),
//   Y@GRAD = a op(X)^T dO, laid out as Y; summed over the batch when Y is shared.
void MatmulGradCudaKernel(KernelContext& ctx) {
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
    RILL_CHECK(g.shape() == MatmulOutShape(x.shape(), d) && g.dtype() == x.dtype(),
               kInvalidArgument, "Out@GRAD is ", g.Describe(), " but Out is ",
               DataTypeName(x.dtype()), ShapeToString(MatmulOutShape(x.shape(), d)));
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
    const bool fold = FoldsBatchIntoRows(d, tx);
    const int64_t rows = fold ? CheckedMultiply(d.batch, d.m) : d.m;  // of X, Out, dO
    const cuda::GemmBatch batches{fold ? 1 : d.batch, 0, 0};
    const cudaStream_t stream = CudaStream::Current();
    if (want_dx) {
      const char* what = "matmul_grad (X@GRAD)";
      Tensor* dx_t = ctx.Output("X@GRAD");
      T* dx = AllocateOn<T>(dx_t, x_shape, ctx.place());
      if (!g) {
        ZeroOnDevice(dx_t, what);
      } else if (!tx) {  // dX [M, K] = dO [M, N] op(Y)^T
        cuda::GemmBatch batch = batches;
        batch.stride_a = g_step;
        batch.stride_b = y_step;
        cuda::Gemm<T>(false, !ty, rows, d.k, d.n, a, g, yp, T(0), dx, stream, what, batch);
      } else {  // dX [K, M] = op(Y) [K, N] dO^T
        cuda::GemmBatch batch = batches;
        batch.stride_a = y_step;
        batch.stride_b = g_step;
        cuda::Gemm<T>(ty, true, d.k, d.m, d.n, a, yp, g, T(0), dx, stream, what, batch);
      }
    }
    if (want_dy) {
      const char* what = "matmul_grad (Y@GRAD)";
      Tensor* dy_t = ctx.Output("Y@GRAD");
      T* dy = AllocateOn<T>(dy_t, y_shape, ctx.place());
      if (!g) {
        ZeroOnDevice(dy_t, what);
      } else if (d.y_batched || fold) {  // one GEMM; a folded batch sums in its inner dim
        cuda::GemmBatch batch = batches;
        if (!ty) {  // dY [K, N] = op(X)^T [K, M] dO
          batch.stride_a = x_step;
          batch.stride_b = g_step;
          cuda::Gemm<T>(!tx, false, d.k, d.n, rows, a, xp, g, T(0), dy, stream, what, batch);
        } else {  // dY [N, K] = dO^T op(X)
          batch.stride_a = g_step;
          batch.stride_b = x_step;
          cuda::Gemm<T>(true, tx, d.n, d.k, rows, a, g, xp, T(0), dy, stream, what, batch);
        }
      } else {  // a shared Y with transpose_X: the batch's products added one by one
        ZeroOnDevice(dy_t, what);
        for (int64_t i = 0; i < d.batch; ++i) {
          const T* gi = g + i * g_step;
          const T* xi = xp + i * x_step;
          if (!ty) {
            cuda::Gemm<T>(false, false, d.k, d.n, d.m, a, xi, gi, T(1), dy, stream, what);
          } else {
            cuda::Gemm<T>(true, true, d.n, d.k, d.m, a, gi, xi, T(1), dy, stream, what);
          }
        }
      }
    }
  });
}

}  // namespace

RILL_REGISTER_KERNEL(mul, Cuda, MulCudaKernel);
RILL_REGISTER_KERNEL(mul_grad, Cuda, MulGradCudaKernel);
RILL_REGISTER_KERNEL(matmul, Cuda, MatmulCudaKernel);
RILL_REGISTER_KERNEL(matmul_grad, Cuda, MatmulGradCudaKernel);

}  // namespace rill
