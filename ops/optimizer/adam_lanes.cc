#include "ops/optimizer/adam_lanes.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#include <immintrin.h>
#define RILL_ADAM_X86 1
#endif

namespace rill {
namespace {

#if defined(RILL_ADAM_X86)
// The compiler does not vectorise std::sqrt (it may set errno), so the x86
// paths are written with intrinsics: SSE2 (always there on x86-64), AVX and
// AVX-512 (the widest the CPU has, chosen at run time; per element the same
// operations, so the same bits, at 4, 8 or 16 floats a step). Each returns
// how many leading elements it updated.
int64_t AdamLanesSse2(float* p, float* m, float* v, const float* g, int64_t n,
                      const AdamCoefficients<float>& c) {
  const __m128 b1 = _mm_set1_ps(c.beta1), c1 = _mm_set1_ps(c.one_minus_beta1);
  const __m128 b2 = _mm_set1_ps(c.beta2), c2 = _mm_set1_ps(c.one_minus_beta2);
  const __m128 step = _mm_set1_ps(c.step_size), bc2 = _mm_set1_ps(c.bias_correction2_sqrt);
  const __m128 eps = _mm_set1_ps(c.epsilon), decay = _mm_set1_ps(c.decay);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 gi = _mm_loadu_ps(g + i);
    const __m128 mi = _mm_add_ps(_mm_mul_ps(b1, _mm_loadu_ps(m + i)), _mm_mul_ps(c1, gi));
    const __m128 vi =
        _mm_add_ps(_mm_mul_ps(b2, _mm_loadu_ps(v + i)), _mm_mul_ps(_mm_mul_ps(c2, gi), gi));
    const __m128 denom = _mm_add_ps(_mm_div_ps(_mm_sqrt_ps(vi), bc2), eps);
    _mm_storeu_ps(m + i, mi);
    _mm_storeu_ps(v + i, vi);
    const __m128 pi = _mm_mul_ps(_mm_loadu_ps(p + i), decay);
    _mm_storeu_ps(p + i, _mm_sub_ps(pi, _mm_div_ps(_mm_mul_ps(step, mi), denom)));
  }
  return i;
}

int64_t AdamLanesSse2(double* p, double* m, double* v, const double* g, int64_t n,
                      const AdamCoefficients<double>& c) {
  const __m128d b1 = _mm_set1_pd(c.beta1), c1 = _mm_set1_pd(c.one_minus_beta1);
  const __m128d b2 = _mm_set1_pd(c.beta2), c2 = _mm_set1_pd(c.one_minus_beta2);
  const __m128d step = _mm_set1_pd(c.step_size), bc2 = _mm_set1_pd(c.bias_correction2_sqrt);
  const __m128d eps = _mm_set1_pd(c.epsilon), decay = _mm_set1_pd(c.decay);
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128d gi = _mm_loadu_pd(g + i);
    const __m128d mi = _mm_add_pd(_mm_mul_pd(b1, _mm_loadu_pd(m + i)), _mm_mul_pd(c1, gi));
    const __m128d vi =
        _mm_add_pd(_mm_mul_pd(b2, _mm_loadu_pd(v + i)), _mm_mul_pd(_mm_mul_pd(c2, gi), gi));
    const __m128d denom = _mm_add_pd(_mm_div_pd(_mm_sqrt_pd(vi), bc2), eps);
    _mm_storeu_pd(m + i, mi);
    _mm_storeu_pd(v + i, vi);
    const __m128d pi = _mm_mul_pd(_mm_loadu_pd(p + i), decay);
    _mm_storeu_pd(p + i, _mm_sub_pd(pi, _mm_div_pd(_mm_mul_pd(step, mi), denom)));
  }
  return i;
}

__attribute__((target("avx"))) int64_t AdamLanesAvx(float* p, float* m, float* v, const float* g,
                                                    int64_t n, const AdamCoefficients<float>& c) {
  const __m256 b1 = _mm256_set1_ps(c.beta1), c1 = _mm256_set1_ps(c.one_minus_beta1);
  const __m256 b2 = _mm256_set1_ps(c.beta2), c2 = _mm256_set1_ps(c.one_minus_beta2);
  const __m256 step = _mm256_set1_ps(c.step_size);
  const __m256 bc2 = _mm256_set1_ps(c.bias_correction2_sqrt);
  const __m256 eps = _mm256_set1_ps(c.epsilon);
  const __m256 decay = _mm256_set1_ps(c.decay);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    const __m256 mi =
        _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                    _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2), eps);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    const __m256 pi = _mm256_mul_ps(_mm256_loadu_ps(p + i), decay);
    _mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_div_ps(_mm256_mul_ps(step, mi), denom)));
  }
  return i;
}

__attribute__((target("avx"))) int64_t AdamLanesAvx(double* p, double* m, double* v,
                                                    const double* g, int64_t n,
                                                    const AdamCoefficients<double>& c) {
  const __m256d b1 = _mm256_set1_pd(c.beta1), c1 = _mm256_set1_pd(c.one_minus_beta1);
  const __m256d b2 = _mm256_set1_pd(c.beta2), c2 = _mm256_set1_pd(c.one_minus_beta2);
  const __m256d step = _mm256_set1_pd(c.step_size);
  const __m256d bc2 = _mm256_set1_pd(c.bias_correction2_sqrt);
  const __m256d eps = _mm256_set1_pd(c.epsilon);
  const __m256d decay = _mm256_set1_pd(c.decay);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d gi = _mm256_loadu_pd(g + i);
    const __m256d mi =
        _mm256_add_pd(_mm256_mul_pd(b1, _mm256_loadu_pd(m + i)), _mm256_mul_pd(c1, gi));
    const __m256d vi = _mm256_add_pd(_mm256_mul_pd(b2, _mm256_loadu_pd(v + i)),
                                     _mm256_mul_pd(_mm256_mul_pd(c2, gi), gi));
    const __m256d denom = _mm256_add_pd(_mm256_div_pd(_mm256_sqrt_pd(vi), bc2), eps);
    _mm256_storeu_pd(m + i, mi);
    _mm256_storeu_pd(v + i, vi);
    const __m256d pi = _mm256_mul_pd(_mm256_loadu_pd(p + i), decay);
    _mm256_storeu_pd(p + i, _mm256_sub_pd(pi, _mm256_div_pd(_mm256_mul_pd(step, mi), denom)));
  }
  return i;
}

// GCC 12's _mm512_sqrt_ps/pd pass _mm512_undefined_*() as the unused
// pass-through operand, which -Wmaybe-uninitialized reports inside its header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) int64_t AdamLanesAvx512(float* p, float* m, float* v,
                                                           const float* g, int64_t n,
                                                           const AdamCoefficients<float>& c) {
  const __m512 b1 = _mm512_set1_ps(c.beta1), c1 = _mm512_set1_ps(c.one_minus_beta1);
  const __m512 b2 = _mm512_set1_ps(c.beta2), c2 = _mm512_set1_ps(c.one_minus_beta2);
  const __m512 step = _mm512_set1_ps(c.step_size);
  const __m512 bc2 = _mm512_set1_ps(c.bias_correction2_sqrt);
  const __m512 eps = _mm512_set1_ps(c.epsilon);
  const __m512 decay = _mm512_set1_ps(c.decay);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    const __m512 mi =
        _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(c1, gi));
    const __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(v + i)),
                                    _mm512_mul_ps(_mm512_mul_ps(c2, gi), gi));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2), eps);
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    const __m512 pi = _mm512_mul_ps(_mm512_loadu_ps(p + i), decay);
    _mm512_storeu_ps(p + i, _mm512_sub_ps(pi, _mm512_div_ps(_mm512_mul_ps(step, mi), denom)));
  }
  return i;
}

__attribute__((target("avx512f"))) int64_t AdamLanesAvx512(double* p, double* m, double* v,
                                                           const double* g, int64_t n,
                                                           const AdamCoefficients<double>& c) {
  const __m512d b1 = _mm512_set1_pd(c.beta1), c1 = _mm512_set1_pd(c.one_minus_beta1);
  const __m512d b2 = _mm512_set1_pd(c.beta2), c2 = _mm512_set1_pd(c.one_minus_beta2);
  const __m512d step = _mm512_set1_pd(c.step_size);
  const __m512d bc2 = _mm512_set1_pd(c.bias_correction2_sqrt);
  const __m512d eps = _mm512_set1_pd(c.epsilon);
  const __m512d decay = _mm512_set1_pd(c.decay);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d gi = _mm512_loadu_pd(g + i);
    const __m512d mi =
        _mm512_add_pd(_mm512_mul_pd(b1, _mm512_loadu_pd(m + i)), _mm512_mul_pd(c1, gi));
    const __m512d vi = _mm512_add_pd(_mm512_mul_pd(b2, _mm512_loadu_pd(v + i)),
                                     _mm512_mul_pd(_mm512_mul_pd(c2, gi), gi));
    const __m512d denom = _mm512_add_pd(_mm512_div_pd(_mm512_sqrt_pd(vi), bc2), eps);
    _mm512_storeu_pd(m + i, mi);
    _mm512_storeu_pd(v + i, vi);
    const __m512d pi = _mm512_mul_pd(_mm512_loadu_pd(p + i), decay);
    _mm512_storeu_pd(p + i, _mm512_sub_pd(pi, _mm512_div_pd(_mm512_mul_pd(step, mi), denom)));
  }
  return i;
}

#pragma GCC diagnostic pop

// The widest lanes this CPU runs: 2 AVX-512, 1 AVX, 0 SSE2.
int VectorLevel() {
  static const int level = __builtin_cpu_supports("avx512f") ? 2
                           : __builtin_cpu_supports("avx")   ? 1
                                                             : 0;
  return level;
}

template <class T>
int64_t DispatchLanes(T* p, T* m, T* v, const T* g, int64_t n, const AdamCoefficients<T>& c) {
  switch (VectorLevel()) {
    case 2: return AdamLanesAvx512(p, m, v, g, n, c);
    case 1: return AdamLanesAvx(p, m, v, g, n, c);
    default: return AdamLanesSse2(p, m, v, g, n, c);
  }
}
#endif  // RILL_ADAM_X86

}  // namespace

int64_t AdamLanes(float* p, float* m, float* v, const float* g, int64_t n,
                  const AdamCoefficients<float>& c) {
#if defined(RILL_ADAM_X86)
  return DispatchLanes(p, m, v, g, n, c);
#else
  return 0;
#endif
}

int64_t AdamLanes(double* p, double* m, double* v, const double* g, int64_t n,
                  const AdamCoefficients<double>& c) {
#if defined(RILL_ADAM_X86)
  return DispatchLanes(p, m, v, g, n, c);
#else
  return 0;
#endif
}

}  // namespace rill
