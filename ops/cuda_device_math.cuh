// What every .cu file of the ops uses (nvcc, C++17; .cu files only): the
// launch shape of grid-stride loops, and arithmetic rounded once per
// operation as on the CPU. The x86-64 build has no FMA, and nvcc would
// otherwise contract a * b + c into one; the _rn intrinsics also keep
// division and sqrt correctly rounded under fast-math flags. Integer Add
// wraps, as the CPU's does in practice.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

constexpr int kThreads = 256;  // per block; a power of two (block reductions halve it)

// Blocks for n elements in a grid-stride loop: at least 1, at most 4096.
inline int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

// Whether a kernel may index `extent` elements in 32 bits: with room for a
// grid-stride loop's last step (at most 4096 * 256 past the end) not to
// overflow. 64-bit division and remainder are emulated on the GPU, many
// times slower than 32-bit ones.
inline bool FitsInt32(int64_t extent) { return extent < (int64_t{1} << 30); }

__device__ __forceinline__ float Add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double Add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ int32_t Add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
__device__ __forceinline__ int64_t Add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
__device__ __forceinline__ float Sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double Sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float Mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double Mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float Div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double Div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float SqrtOf(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double SqrtOf(double a) { return __dsqrt_rn(a); }
// libm-like functions: a few ulp from glibc's (the agreement cases say so).
__device__ __forceinline__ float ExpOf(float a) { return expf(a); }
__device__ __forceinline__ double ExpOf(double a) { return exp(a); }
__device__ __forceinline__ float LogOf(float a) { return logf(a); }
__device__ __forceinline__ double LogOf(double a) { return log(a); }
__device__ __forceinline__ float TanhOf(float a) { return tanhf(a); }
__device__ __forceinline__ double TanhOf(double a) { return tanh(a); }
__device__ __forceinline__ float ErfOf(float a) { return erff(a); }
__device__ __forceinline__ double ErfOf(double a) { return erf(a); }

}  // namespace rill::cuda
