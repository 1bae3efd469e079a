// The CUDA kernels of mul, mul_grad, matmul and matmul_grad: the CPU kernels'
// checks and dims, from the code both share (mul_matmul_operands.h), outputs
// allocated on the op's device, the products queued on the stream the
// executor is launching on (CudaStream::Current()) as cuBLAS GEMMs
// (gemm_cuda.h). float32 and float64 only, as there.
//
// Each GEMM is the CPU kernel's, with the same operands, transposes and
// alpha; only batches are run differently: a matmul whose Y is one matrix
// shared by every matrix of X (not transposed, not broadcast) is one GEMM over
// X seen as [B * M, K] (for Y@GRAD the batch sum becomes part of the inner
// dim); other batches are one strided-batched GEMM per run of constant
// strides (MatmulBatch::Runs: one run unless a batch dim broadcasts). The
// gradient of a matrix read by several products (a broadcast batch dim) adds
// their products into it one GEMM at a time, in product order, as the CPU
// does. Unbound gradient outputs are not computed; a missing Out@GRAD gives
// zeros.
#include <utility>

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

// One Y shared by an untransposed X whose matrices are each read once: the
// batch's matrices of X (and of Out and Out@GRAD) lie one under the other, so
// the batch is one [B * M, .] matrix (also for rank 2, where B is 1).
bool FoldsBatchIntoRows(const MatmulDims& d, bool tx) {
  return d.batch.y_count() == 1 && !d.batch.x_reused() && !tx;
}

void MatmulCudaKernel(KernelContext& ctx) {
  const auto product = [&ctx]<class T>(const MatmulOperands& op, const T* a, const T* b,
                                       Tensor* out) {
    const MatmulDims& d = op.d;
    T* c = AllocateOn<T>(out, op.out_shape, ctx.place());
    const T al = static_cast<T>(op.alpha);
    const cudaStream_t stream = CudaStream::Current();
    if (FoldsBatchIntoRows(d, op.tx)) {
      cuda::Gemm<T>(false, op.ty, CheckedMultiply(d.batch.count(), d.m), d.n, d.k, al, a, b, T(0),
                    c, stream, "matmul");
      return;
    }
    for (const MatmulRun& run : d.batch.Runs()) {
      const cuda::GemmBatch batch{run.count, run.x_stride * d.x_size(), run.y_stride * d.y_size()};
      cuda::Gemm<T>(op.tx, op.ty, d.m, d.n, d.k, al, a + run.x_first * d.x_size(),
                    b + run.y_first * d.y_size(), T(0), c + run.out_first * d.out_size(), stream,
                    "matmul", batch);
    }
  };
  RunGemm(ctx, ResolveMatmul, product);
}

// X@GRAD of matmul (see MatmulGradCudaKernel): one GEMM when Y is shared and
// the batch folds, a strided-batched GEMM per run when each matrix of X is
// read once, else every product's term added one GEMM at a time.
template <class T>
void MatmulDxCuda(const MatmulOperands& op, const GemmGradIo<T>& io, T* dx) {
  const MatmulDims& d = op.d;
  const T a = static_cast<T>(op.alpha);
  const cudaStream_t stream = CudaStream::Current();
  const char* what = "matmul_grad (X@GRAD)";
  const T* g = io.dout;
  // One product: dX [M, K] = dO [M, N] op(Y)^T, or dX [K, M] = op(Y) [K, N] dO^T.
  const auto gemm = [&](int64_t rows, const T* gi, const T* yi, T beta, T* dxi,
                        cuda::GemmBatch batch) {
    if (!op.tx) {
      cuda::Gemm<T>(false, !op.ty, rows, d.k, d.n, a, gi, yi, beta, dxi, stream, what, batch);
    } else {
      std::swap(batch.stride_a, batch.stride_b);
      cuda::Gemm<T>(op.ty, true, d.k, d.m, d.n, a, yi, gi, beta, dxi, stream, what, batch);
    }
  };
  if (FoldsBatchIntoRows(d, op.tx)) {
    gemm(CheckedMultiply(d.batch.count(), d.m), g, io.y, T(0), dx, {});
  } else if (!d.batch.x_reused()) {
    for (const MatmulRun& run : d.batch.Runs()) {
      const cuda::GemmBatch batch{run.count, d.out_size(), run.y_stride * d.y_size()};
      gemm(d.m, g + run.out_first * d.out_size(), io.y + run.y_first * d.y_size(), T(0),
           dx + run.out_first * d.x_size(), batch);
    }
  } else {
    ZeroOnDevice(io.dx, what);
    for (int64_t i = 0; i < d.batch.count(); ++i) {
      gemm(d.m, g + i * d.out_size(), io.y + d.y_offset(i), T(1), dx + d.x_offset(i), {});
    }
  }
}

// Y@GRAD of matmul, as MatmulDxCuda; a folded batch sums in the inner dim.
template <class T>
void MatmulDyCuda(const MatmulOperands& op, const GemmGradIo<T>& io, T* dy) {
  const MatmulDims& d = op.d;
  const T a = static_cast<T>(op.alpha);
  const cudaStream_t stream = CudaStream::Current();
  const char* what = "matmul_grad (Y@GRAD)";
  const T* g = io.dout;
  // dY [K, N] = op(X)^T [K, M] dO, or dY [N, K] = dO^T op(X), over `inner`
  // rows of X and dO.
  const auto gemm = [&](int64_t inner, const T* gi, const T* xi, T beta, T* dyi,
                        cuda::GemmBatch batch) {
    if (!op.ty) {
      std::swap(batch.stride_a, batch.stride_b);
      cuda::Gemm<T>(!op.tx, false, d.k, d.n, inner, a, xi, gi, beta, dyi, stream, what, batch);
    } else {
      cuda::Gemm<T>(true, op.tx, d.n, d.k, inner, a, gi, xi, beta, dyi, stream, what, batch);
    }
  };
  if (FoldsBatchIntoRows(d, op.tx)) {
    gemm(CheckedMultiply(d.batch.count(), d.m), g, io.x, T(0), dy, {});
  } else if (!d.batch.y_reused()) {
    for (const MatmulRun& run : d.batch.Runs()) {
      const cuda::GemmBatch batch{run.count, d.out_size(), run.x_stride * d.x_size()};
      gemm(d.m, g + run.out_first * d.out_size(), io.x + run.x_first * d.x_size(), T(0),
           dy + run.out_first * d.y_size(), batch);
    }
  } else {
    ZeroOnDevice(io.dy, what);
    for (int64_t i = 0; i < d.batch.count(); ++i) {
      gemm(d.m, g + i * d.out_size(), io.x + d.x_offset(i), T(1), dy + d.y_offset(i), {});
    }
  }
}

// Per product, with dO = Out@GRAD and a = alpha:
//   X@GRAD = a dO op(Y)^T, laid out as X (transposed back when transpose_X),
//   Y@GRAD = a op(X)^T dO, laid out as Y; summed where a matrix is shared.
void MatmulGradCudaKernel(KernelContext& ctx) {
  const auto grads = [&ctx]<class T>(const MatmulOperands& op, const GemmGradIo<T>& io) {
    if (io.dx) {
      T* dx = AllocateOn<T>(io.dx, io.x_shape, ctx.place());
      if (io.dout) {
        MatmulDxCuda(op, io, dx);
      } else {
        ZeroOnDevice(io.dx, "matmul_grad (X@GRAD)");
      }
    }
    if (io.dy) {
      T* dy = AllocateOn<T>(io.dy, io.y_shape, ctx.place());
      if (io.dout) {
        MatmulDyCuda(op, io, dy);
      } else {
        ZeroOnDevice(io.dy, "matmul_grad (Y@GRAD)");
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
