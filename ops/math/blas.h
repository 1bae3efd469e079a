// CPU GEMM through OpenBLAS, for float and double, row-major:
//   C = alpha * op(A) * op(B) + beta * C,  op(A) is [m, k], op(B) is [k, n], C is [m, n].
// The BLAS thread count is process-wide: SetBlasThreads picks it so that BLAS
// and the executor's own threads do not oversubscribe the cores.
#pragma once

#include <cstdint>

namespace rill {

template <class T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          const T* b, T beta, T* c);

// Sets OpenBLAS's thread count (>= 1).
void SetBlasThreads(int threads);
int BlasThreads();

}  // namespace rill
