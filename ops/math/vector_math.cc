#include "ops/math/vector_math.h"

#include <cmath>

#if defined(RILL_HAVE_LIBMVEC)
#include <immintrin.h>
// glibc's libmvec: four floats in an SSE register (the x86-64 baseline), or
// eight in an AVX register where the CPU has AVX2 (0.38 ns a value for exp
// here against 0.88: the softmax, gelu and recurrent gates spend it).
extern "C" __m128 _ZGVbN4v_erff(__m128 x);
extern "C" __m128 _ZGVbN4v_expf(__m128 x);
extern "C" __m256 _ZGVdN8v_erff(__m256 x);
extern "C" __m256 _ZGVdN8v_expf(__m256 x);
#endif

namespace rill {
namespace {

#if defined(RILL_HAVE_LIBMVEC)
// y = f(x) four at a time; the last 1-3 values padded to a full vector.
template <__m128 (*F)(__m128)>
void FourAtATime(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, F(_mm_loadu_ps(x + i)));
  if (i == n) return;
  float in[4] = {0, 0, 0, 0}, out[4];
  for (int64_t k = i; k < n; ++k) in[k - i] = x[k];
  _mm_storeu_ps(out, F(_mm_loadu_ps(in)));
  for (int64_t k = i; k < n; ++k) y[k] = out[k - i];
}

// The same eight at a time (AVX2: only where HasAvx2).
template <__m256 (*F)(__m256)>
__attribute__((target("avx2"))) void EightAtATime(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i == n) return;
  float in[8] = {0, 0, 0, 0, 0, 0, 0, 0}, out[8];
  for (int64_t k = i; k < n; ++k) in[k - i] = x[k];
  _mm256_storeu_ps(out, F(_mm256_loadu_ps(in)));
  for (int64_t k = i; k < n; ++k) y[k] = out[k - i];
}

// The two widths round some values differently (about one in ten, each within
// the bound), so every call on a machine takes the same one.
bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

}  // namespace

void VectorExp(const float* x, float* y, int64_t n) {
#if defined(RILL_HAVE_LIBMVEC)
  if (HasAvx2()) return EightAtATime<_ZGVdN8v_expf>(x, y, n);
  FourAtATime<_ZGVbN4v_expf>(x, y, n);
#else
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
#endif
}

void VectorExp(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void VectorErf(const float* x, float* y, int64_t n) {
#if defined(RILL_HAVE_LIBMVEC)
  if (HasAvx2()) return EightAtATime<_ZGVdN8v_erff>(x, y, n);
  FourAtATime<_ZGVbN4v_erff>(x, y, n);
#else
  for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
#endif
}

void VectorErf(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
}

}  // namespace rill
