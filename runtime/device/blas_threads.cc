#include "runtime/device/blas_threads.h"

#include <cblas.h>

namespace rill {

void SetBlasThreads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

int BlasThreads() { return openblas_get_num_threads(); }

}  // namespace rill
