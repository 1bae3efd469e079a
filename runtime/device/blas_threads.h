// The process-wide thread count of OpenBLAS, the CPU place's GEMM. The
// executor picks it (ExecutionStrategy::blas_threads) so that BLAS's threads
// and its own do not oversubscribe the cores.
#pragma once

namespace rill {

// Sets OpenBLAS's thread count (>= 1).
void SetBlasThreads(int threads);
int BlasThreads();

}  // namespace rill
