// The element update of adam and adamw and its vector lanes (adam_update.cc
// runs them): AdamLanes updates a leading run of elements with the widest
// vectors the CPU has (x86: AVX-512, AVX or SSE2, chosen at run time; none
// elsewhere), AdamElement the rest. Every path does the same operations in
// the same order without fused multiply-adds (adam_lanes.cc is built with
// -ffp-contract=off), so all give the same bits.
#pragma once

#include <cmath>
#include <cstdint>

namespace rill {

template <class T>
struct AdamCoefficients {
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T step_size;              // lr / (1 - beta1^t)
  T bias_correction2_sqrt;  // sqrt(1 - beta2^t)
  T epsilon;
  T decay;  // 1 - lr * weight_decay: exactly 1 for adam, and p * 1 is p
};

// One element, in PyTorch's order of operations (AdamW's decay first):
//   p = p * (1 - lr wd);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g g;
//   p = p - step_size * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// The vector paths below do the same operations in the same order (no fused
// multiply-add), so every path gives the same bits.
template <class T>
inline void AdamElement(T& p, T& m, T& v, T g, const AdamCoefficients<T>& c) {
  m = c.beta1 * m + c.one_minus_beta1 * g;
  v = c.beta2 * v + c.one_minus_beta2 * g * g;
  p = p * c.decay - c.step_size * m / (std::sqrt(v) / c.bias_correction2_sqrt + c.epsilon);
}

// Updates elements [0, k) with vector lanes and returns k (0 without any).
int64_t AdamLanes(float* p, float* m, float* v, const float* g, int64_t n,
                  const AdamCoefficients<float>& c);
int64_t AdamLanes(double* p, double* m, double* v, const double* g, int64_t n,
                  const AdamCoefficients<double>& c);

}  // namespace rill
