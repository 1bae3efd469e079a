// The CUDA kernels of mul, mul_grad, matmul and matmul_grad: the CPU kernels'
// checks and dims, from the code both share (mul_matmul_operands.h), outputs
// allocated on the op's device, the products queued on the stream the
// executor is launching on (CudaStream::Current()) as cuBLAS GEMMs
// (gemm_cuda.h). float32 and float64 only, as there.
//
// Each GEMM is the CPU kernel's, with the same operands, transposes and
// alpha; only batches are run differently: a matmul whose rank-2 Y is shared
// by a rank-3 X (not transposed) is one GEMM over X seen as [B * M, K] (for
// Y@GRAD the batch sum becomes part of the inner dim), other batches are one
// strided-batched GEMM, and Y@GRAD of a shared Y with transpose_X adds the
// batch's products into Y@GRAD one GEMM at a time, as the CPU does. Unbound
// gradient outputs are not computed; a missing Out@GRAD gives zeros.
#include "ops/math/gemm_cuda.h"
#include "ops/math/mul_matmul_operands.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

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

void MulCudaKernel(KernelContext& ctx) {
  const auto product = [&ctx]<class T>(const MulOperands& m, const T* a, const T* b, Tensor* out) {
    T* c = AllocateOn<T>(out, m.out_shape, ctx.place());
    cuda::Gemm<T>(false, false, m.x.rows, m.y.cols, m.x.cols, T(1), a, b, T(0), c,
                  CudaStream::Current(), "mul");
  };
  RunGemm(ctx, ResolveMul, product);
}

// X@GRAD = Out@GRAD * Y^T, Y@GRAD = X^T * Out@GRAD (in the flattened views).
void MulGradCudaKernel(KernelContext& ctx) {
  const auto grads = [&ctx]<class T>(const MulOperands& m, const GemmGradIo<T>& io) {
    const cudaStream_t stream = CudaStream::Current();
    if (io.dx) {
      T* dx = AllocateOn<T>(io.dx, io.x_shape, ctx.place());
      if (io.dout) {
        cuda::Gemm<T>(false, true, m.x.rows, m.x.cols, m.y.cols, T(1), io.dout, io.y, T(0), dx,
                      stream, "mul_grad (X@GRAD)");
      } else {
        ZeroOnDevice(io.dx, "mul_grad (X@GRAD)");
      }
    }
    if (io.dy) {
      T* dy = AllocateOn<T>(io.dy, io.y_shape, ctx.place());
      if (io.dout) {
        cuda::Gemm<T>(true, false, m.y.rows, m.y.cols, m.x.rows, T(1), io.x, io.dout, T(0), dy,
                      stream, "mul_grad (Y@GRAD)");
      } else {
        ZeroOnDevice(io.dy, "mul_grad (Y@GRAD)");
      }
    }
  };
  RunGemmGrad(ctx, ResolveMulGrad, grads);
}

// -- matmul -------------------------------------------------------------------

// A shared Y with an untransposed X: the batch's matrices of X (and of Out
// and Out@GRAD) lie one under the other, so the batch is one [B * M, .]
// matrix (also for rank 2, where B is 1).
bool FoldsBatchIntoRows(const MatmulDims& d, bool tx) { return !d.y_batched && !tx; }

void MatmulCudaKernel(KernelContext& ctx) {
  const auto product = [&ctx]<class T>(const MatmulOperands& op, const T* a, const T* b,
                                       Tensor* out) {
    const MatmulDims& d = op.d;
    T* c = AllocateOn<T>(out, op.out_shape, ctx.place());
    const T al = static_cast<T>(op.alpha);
    const cudaStream_t stream = CudaStream::Current();
    if (FoldsBatchIntoRows(d, op.tx)) {
      cuda::Gemm<T>(false, op.ty, CheckedMultiply(d.batch, d.m), d.n, d.k, al, a, b, T(0), c,
                    stream, "matmul");
    } else {
      const cuda::GemmBatch batch{d.batch, d.x_step(), d.y_step()};
      cuda::Gemm<T>(op.tx, op.ty, d.m, d.n, d.k, al, a, b, T(0), c, stream, "matmul", batch);
    }
  };
  RunGemm(ctx, ResolveMatmul, product);
}

// Per matrix, with dO = Out@GRAD and a = alpha:
//   X@GRAD = a dO op(Y)^T, laid out as X (transposed back when transpose_X),
//   Y@GRAD = a op(X)^T dO, laid out as Y; summed over the batch when Y is shared.
void MatmulGradCudaKernel(KernelContext& ctx) {
  const auto grads = [&ctx]<class T>(const MatmulOperands& op, const GemmGradIo<T>& io) {
    const MatmulDims& d = op.d;
    const bool tx = op.tx;
    const bool ty = op.ty;
    const T a = static_cast<T>(op.alpha);
    const T* xp = io.x;
    const T* yp = io.y;
    const T* g = io.dout;
    const bool fold = FoldsBatchIntoRows(d, tx);
    const int64_t rows = fold ? CheckedMultiply(d.batch, d.m) : d.m;  // of X, Out, dO
    const cuda::GemmBatch batches{fold ? 1 : d.batch, 0, 0};
    const cudaStream_t stream = CudaStream::Current();
    if (io.dx) {
      const char* what = "matmul_grad (X@GRAD)";
      T* dx = AllocateOn<T>(io.dx, io.x_shape, ctx.place());
      if (!g) {
        ZeroOnDevice(io.dx, what);
      } else if (!tx) {  // dX [M, K] = dO [M, N] op(Y)^T
        cuda::GemmBatch batch = batches;
        batch.stride_a = d.out_step();
        batch.stride_b = d.y_step();
        cuda::Gemm<T>(false, !ty, rows, d.k, d.n, a, g, yp, T(0), dx, stream, what, batch);
      } else {  // dX [K, M] = op(Y) [K, N] dO^T
        cuda::GemmBatch batch = batches;
        batch.stride_a = d.y_step();
        batch.stride_b = d.out_step();
        cuda::Gemm<T>(ty, true, d.k, d.m, d.n, a, yp, g, T(0), dx, stream, what, batch);
      }
    }
    if (io.dy) {
      const char* what = "matmul_grad (Y@GRAD)";
      T* dy = AllocateOn<T>(io.dy, io.y_shape, ctx.place());
      if (!g) {
        ZeroOnDevice(io.dy, what);
      } else if (d.y_batched || fold) {  // one GEMM; a folded batch sums in its inner dim
        cuda::GemmBatch batch = batches;
        if (!ty) {  // dY [K, N] = op(X)^T [K, M] dO
          batch.stride_a = d.x_step();
          batch.stride_b = d.out_step();
          cuda::Gemm<T>(!tx, false, d.k, d.n, rows, a, xp, g, T(0), dy, stream, what, batch);
        } else {  // dY [N, K] = dO^T op(X)
          batch.stride_a = d.out_step();
          batch.stride_b = d.x_step();
          cuda::Gemm<T>(true, tx, d.n, d.k, rows, a, g, xp, T(0), dy, stream, what, batch);
        }
      } else {  // a shared Y with transpose_X: the batch's products added one by one
        ZeroOnDevice(io.dy, what);
        for (int64_t i = 0; i < d.batch; ++i) {
          const T* gi = g + i * d.out_step();
          const T* xi = xp + i * d.x_step();
          if (!ty) {
            cuda::Gemm<T>(false, false, d.k, d.n, d.m, a, xi, gi, T(1), dy, stream, what);
          } else {
            cuda::Gemm<T>(true, true, d.n, d.k, d.m, a, gi, xi, T(1), dy, stream, what);
          }
        }
      }
    }
  };
  RunGemmGrad(ctx, ResolveMatmulGrad, grads);
}

}  // namespace

RILL_REGISTER_KERNEL(mul, Cuda, MulCudaKernel);
RILL_REGISTER_KERNEL(mul_grad, Cuda, MulGradCudaKernel);
RILL_REGISTER_KERNEL(matmul, Cuda, MatmulCudaKernel);
RILL_REGISTER_KERNEL(matmul_grad, Cuda, MatmulGradCudaKernel);

}  // namespace rill
