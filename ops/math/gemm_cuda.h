// Row-major GEMM on a CUDA stream through cuBLAS, for float and double: what
// blas.h's Gemm is on the CPU, for one matrix or a strided batch of them.
// Included by the glue of mul and matmul (gemm_op_cuda.cc); host code only
// (no .cu: the GEMMs are cuBLAS's and the empty cases need no kernel).
//
// cuBLAS is column-major. A row-major [r, c] matrix read column-major is its
// transpose, so row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T: B goes first, the dims m and n swap, and each leading
// dimension is the row-major row length, as OpenBLAS is given it.
//
// The handle (runtime/device/cublas_handle.h) keeps cuBLAS's default math
// mode: no TF32, so float32 products and sums round as float32. cuBLAS adds
// in an order of its own (blocked, often with FMA, split over k where it
// chooses), so results differ from OpenBLAS's in the last bits.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>

#include "rill/error.h"
#include "rill/shape.h"
#include "runtime/device/cublas_handle.h"
#include "runtime/device/cuda_stream.h"

namespace rill::cuda {

// `count` products at once: A[i] = a + i * stride_a, B[i] = b + i * stride_b
// (a stride of 0 shares one matrix with every product), C[i] = c + i * m * n.
struct GemmBatch {
  int64_t count = 1;
  int64_t stride_a = 0;
  int64_t stride_b = 0;
};

namespace gemm_detail {

// cuBLAS takes int dims; larger ones fail clearly rather than wrap.
inline int CublasInt(int64_t value, const char* what) {
  RILL_CHECK(value >= 0 && value <= INT_MAX, kUnimplemented, "GEMM ", what, " ", value,
             " is outside cuBLAS's int range");
  return static_cast<int>(value);
}

inline cublasOperation_t Op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// cuBLAS's GEMM, strided-batched GEMM and scaling of T.
template <class T>
struct Cublas;
template <>
struct Cublas<float> {
  static constexpr auto gemm = &cublasSgemm;
  static constexpr auto gemm_strided_batched = &cublasSgemmStridedBatched;
  static constexpr auto scal = &cublasSscal;
};
template <>
struct Cublas<double> {
  static constexpr auto gemm = &cublasDgemm;
  static constexpr auto gemm_strided_batched = &cublasDgemmStridedBatched;
  static constexpr auto scal = &cublasDscal;
};

}  // namespace gemm_detail

// Row-major C[i] = alpha * op(A[i]) * op(B[i]) + beta * C[i] for each of
// batch.count products, queued on `stream`: op(A) is [m, k], op(B) [k, n],
// C [m, n], as blas.h's Gemm. Pointers are device memory. As on the CPU, an
// empty C is left alone and an inner dim k of 0 gives C = beta * C (0 when
// beta is 0). Throws rill::Error when a dim exceeds cuBLAS's int range or
// cuBLAS refuses the call; `what` names the op in that error.
template <class T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          const T* b, T beta, T* c, cudaStream_t stream, const char* what, GemmBatch batch = {}) {
  using gemm_detail::CublasInt;
  if (batch.count == 0 || m == 0 || n == 0) return;
  const int64_t c_elements = CheckedMultiply(CheckedMultiply(m, n), batch.count);
  if (k == 0) {  // blas.cc's HandledAsEmpty
    if (beta == T(0)) {
      const cudaError_t status =
          cudaMemsetAsync(c, 0, static_cast<size_t>(c_elements) * sizeof(T), stream);
      if (status != cudaSuccess) CheckCuda(status, StrCat(what, ": zeroing an empty product"));
    } else if (beta != T(1)) {
      const cublasStatus_t status = gemm_detail::Cublas<T>::scal(
          CublasHandle(stream), CublasInt(c_elements, "C size"), &beta, c, 1);
      if (status != CUBLAS_STATUS_SUCCESS) {
        CheckCublas(status, StrCat(what, ": scaling an empty product"));
      }
    }
    return;
  }
  // Column-major C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m].
  const cublasOperation_t op_b = gemm_detail::Op(trans_b);
  const cublasOperation_t op_a = gemm_detail::Op(trans_a);
  const int cm = CublasInt(n, "n");
  const int cn = CublasInt(m, "m");
  const int ck = CublasInt(k, "k");
  const int ldb = CublasInt(trans_b ? k : n, "leading dim of B");
  const int lda = CublasInt(trans_a ? m : k, "leading dim of A");
  const int ldc = cm;
  cublasHandle_t handle = CublasHandle(stream);
  const cublasStatus_t status =
      batch.count == 1 ? gemm_detail::Cublas<T>::gemm(handle, op_b, op_a, cm, cn, ck, &alpha, b,
                                                      ldb, a, lda, &beta, c, ldc)
                       : gemm_detail::Cublas<T>::gemm_strided_batched(
                             handle, op_b, op_a, cm, cn, ck, &alpha, b, ldb, batch.stride_b, a, lda,
                             batch.stride_a, &beta, c, ldc, m * n, CublasInt(batch.count, "batch"));
  if (status != CUBLAS_STATUS_SUCCESS) {  // the message is built only on failure
    CheckCublas(status, StrCat(what, ": cuBLAS GEMM of ", batch.count, " x [", m, ", ", k, "] x [",
                               k, ", ", n, "]"));
  }
}

}  // namespace rill::cuda
