// Elementwise exp and erf over arrays, for the ops whose time they dominate
// (softmax, softmax_with_cross_entropy, gelu). float32 goes through glibc's
// vector math library where the build found it (RILL_HAVE_LIBMVEC: x86-64,
// glibc >= 2.35): eight values at a time where the CPU has AVX2, else four,
// every value through the same vector code (a tail is padded), so a value's
// result does not depend on where in an array it stands; within 3 ulp of the exact values
// (measured: 2.2 for exp, 1.9 for erf; erff here cost 12 ns a value as a scalar, 0.9 in the
// vector). float64, and float32 elsewhere, calls std::exp and std::erf. `x` may be `y`.
#pragma once

#include <cstdint>

namespace rill {

void VectorExp(const float* x, float* y, int64_t n);
void VectorExp(const double* x, double* y, int64_t n);
void VectorErf(const float* x, float* y, int64_t n);
void VectorErf(const double* x, double* y, int64_t n);

}  // namespace rill
