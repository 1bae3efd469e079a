// Device code of the optimizer ops (optimizer_cuda.h). Grid-stride loops: one
// launch covers any n with a bounded grid. Thread 0 of each block reads the
// one-element inputs and works out the step's coefficients once, in double as
// the CPU kernels do; every arithmetic operation is written with an explicit
// round-to-nearest intrinsic, so nvcc contracts nothing into a fused
// multiply-add and each element gets the CPU's operations in the CPU's order.
#include "ops/cuda_device_math.cuh"
#include "ops/optimizer/optimizer_cuda.h"

namespace rill::cuda {
namespace {

// 10^0 .. 10^22: every one exact in double.
__constant__ double kPow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// DecimalDouble (ops/decimal_double.h) on the device: the double nearest to the
// shortest decimal that reads back as f. Tries 1, 2, ... 9 significant digits:
// f rounded to k digits is n * 10^q with n < 10^9 and, for |q| <= 22, both
// exact in double, so one multiplication or division gives the double nearest
// to the decimal (as from_chars does); the first that converts back to f is
// the shortest. Values needing |q| > 22 (below about 1e-14 or above 1e22 with
// many digits) keep f's own value. Checked on the host against to_chars and
// from_chars: equal for every float in [1e-6, 10) and 9e6 random ones in
// (1e-13, 1e22).
__device__ double DecimalDouble(float f) {
  if (!isfinite(f) || f == 0.0f) return static_cast<double>(f);
  const float af = fabsf(f);
  const double x = static_cast<double>(af);
  const int e10 = static_cast<int>(floor(log10(x)));
  for (int k = 0; k < 9; ++k) {
    const int q = e10 - k;
    if (q > 22 || q < -22) continue;
    const double scaled = q >= 0 ? __ddiv_rn(x, kPow10[q]) : __dmul_rn(x, kPow10[-q]);
    const double digits = rint(scaled);
    const double d = q >= 0 ? __dmul_rn(digits, kPow10[q]) : __ddiv_rn(digits, kPow10[-q]);
    if (__double2float_rn(d) != af) continue;
    // to_chars prints fixed notation where that is no longer than scientific,
    // and then a float of 2^24 or more (an integer) with all its own digits.
    long long mantissa = static_cast<long long>(digits);
    int exponent = q;
    while (mantissa > 0 && mantissa % 10 == 0) {
      mantissa /= 10;
      ++exponent;
    }
    int significant = 0;
    for (long long left = mantissa; left > 0; left /= 10) ++significant;
    const int e = significant - 1 + exponent;  // d = m.mmm * 10^e
    const int scientific_chars = significant + (significant > 1 ? 1 : 0) + 4;
    if (x >= 16777216.0 && e + 1 <= scientific_chars) return static_cast<double>(f);
    return f < 0 ? -d : d;
  }
  return static_cast<double>(f);
}

// The value of a one-element float32/float64 tensor, as the CPU's ReadScalar.
__device__ double ReadScalar(DeviceScalar s) {
  return s.is_double ? *static_cast<const double*>(s.data)
                     : DecimalDouble(*static_cast<const float*>(s.data));
}

template <class T>
__global__ void SgdKernel(const T* p, const T* g, DeviceScalar lr, T* p_out, int64_t n) {
  __shared__ T rate_shared;
  if (threadIdx.x == 0) rate_shared = static_cast<T>(ReadScalar(lr));
  __syncthreads();
  const T rate = rate_shared;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    p_out[i] = Sub(p[i], Mul(rate, g[i]));
  }
}

template <class T>
__global__ void MomentumKernel(const T* p, const T* v, const T* g, DeviceScalar lr, T mu,
                               bool nesterov, T* p_out, T* v_out, int64_t n) {
  __shared__ T rate_shared;
  if (threadIdx.x == 0) rate_shared = static_cast<T>(ReadScalar(lr));
  __syncthreads();
  const T rate = rate_shared;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const T gi = g[i];
    const T pi = p[i];
    const T vi = Add(Mul(mu, v[i]), gi);
    v_out[i] = vi;
    p_out[i] = nesterov ? Sub(pi, Mul(rate, Add(gi, Mul(mu, vi)))) : Sub(pi, Mul(rate, vi));
  }
}

// AdamCoefficients of adam_update.cc, in this order.
enum {
  kBeta1,
  kOneMinusBeta1,
  kBeta2,
  kOneMinusBeta2,
  kStepSize,
  kBiasCorrection2Sqrt,
  kEpsilon,
  kDecay,
  kNumCoefficients
};

template <class T>
__global__ void AdamKernel(const T* p, const T* m, const T* v, const T* g, DeviceScalar lr,
                           DeviceScalar beta1_pow, DeviceScalar beta2_pow, AdamAttrs attrs,
                           T* p_out, T* m_out, T* v_out, int64_t n) {
  __shared__ T c[kNumCoefficients];
  if (threadIdx.x == 0) {
    const double rate = ReadScalar(lr);
    const double pow1 = ReadScalar(beta1_pow);
    const double pow2 = ReadScalar(beta2_pow);
    c[kBeta1] = static_cast<T>(attrs.beta1);
    c[kOneMinusBeta1] = static_cast<T>(__dsub_rn(1.0, attrs.beta1));
    c[kBeta2] = static_cast<T>(attrs.beta2);
    c[kOneMinusBeta2] = static_cast<T>(__dsub_rn(1.0, attrs.beta2));
    c[kStepSize] = static_cast<T>(__ddiv_rn(rate, __dsub_rn(1.0, pow1)));
    c[kBiasCorrection2Sqrt] = static_cast<T>(__dsqrt_rn(__dsub_rn(1.0, pow2)));
    c[kEpsilon] = static_cast<T>(attrs.epsilon);
    c[kDecay] = static_cast<T>(__dsub_rn(1.0, __dmul_rn(rate, attrs.weight_decay)));
  }
  __syncthreads();
  const T beta1 = c[kBeta1], one_minus_beta1 = c[kOneMinusBeta1];
  const T beta2 = c[kBeta2], one_minus_beta2 = c[kOneMinusBeta2];
  const T step_size = c[kStepSize], bias_correction2_sqrt = c[kBiasCorrection2Sqrt];
  const T epsilon = c[kEpsilon], decay = c[kDecay];
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const T gi = g[i];
    const T pi = Mul(p[i], decay);  // p itself for adam (decay 1)
    const T mi = Add(Mul(beta1, m[i]), Mul(one_minus_beta1, gi));
    const T vi = Add(Mul(beta2, v[i]), Mul(Mul(one_minus_beta2, gi), gi));
    const T denom = Add(Div(SqrtOf(vi), bias_correction2_sqrt), epsilon);
    m_out[i] = mi;
    v_out[i] = vi;
    p_out[i] = Sub(pi, Div(Mul(step_size, mi), denom));
  }
}

__device__ void WriteScalar(void* out, bool is_double, double value) {
  if (is_double) {
    *static_cast<double*>(out) = value;
  } else {
    *static_cast<float*>(out) = __double2float_rn(value);
  }
}

__global__ void AdamAdvancePowersKernel(DeviceScalar beta1_pow, DeviceScalar beta2_pow,
                                        AdamAttrs attrs, void* beta1_pow_out, void* beta2_pow_out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const double pow1 = ReadScalar(beta1_pow);
  const double pow2 = ReadScalar(beta2_pow);
  WriteScalar(beta1_pow_out, beta1_pow.is_double, __dmul_rn(pow1, attrs.beta1));
  WriteScalar(beta2_pow_out, beta2_pow.is_double, __dmul_rn(pow2, attrs.beta2));
}

__global__ void WarmupCosineKernel(DeviceScalar step, DeviceScalar base, WarmupCosineAttrs attrs,
                                   void* out, bool out_double) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  WriteScalar(out, out_double,
              WarmupCosineRate(ReadScalar(base), ReadScalar(step), attrs.warmup_steps,
                               attrs.decay_steps, attrs.min_ratio));
}

}  // namespace

void WarmupCosine(DeviceScalar step, DeviceScalar base, WarmupCosineAttrs attrs, void* out,
                  bool out_double, cudaStream_t stream) {
  WarmupCosineKernel<<<1, 1, 0, stream>>>(step, base, attrs, out, out_double);
}

template <class T>
void Sgd(const T* p, const T* g, DeviceScalar lr, T* p_out, int64_t n, cudaStream_t stream) {
  if (n > 0) SgdKernel<T><<<Blocks(n), kThreads, 0, stream>>>(p, g, lr, p_out, n);
}

template <class T>
void Momentum(const T* p, const T* v, const T* g, DeviceScalar lr, double mu, bool nesterov,
              T* p_out, T* v_out, int64_t n, cudaStream_t stream) {
  if (n > 0) {
    MomentumKernel<T><<<Blocks(n), kThreads, 0, stream>>>(p, v, g, lr, static_cast<T>(mu), nesterov,
                                                          p_out, v_out, n);
  }
}

template <class T>
void Adam(const T* p, const T* m, const T* v, const T* g, DeviceScalar lr, DeviceScalar beta1_pow,
          DeviceScalar beta2_pow, AdamAttrs attrs, T* p_out, T* m_out, T* v_out, int64_t n,
          cudaStream_t stream) {
  if (n > 0) {
    AdamKernel<T><<<Blocks(n), kThreads, 0, stream>>>(p, m, v, g, lr, beta1_pow, beta2_pow, attrs,
                                                      p_out, m_out, v_out, n);
  }
}

void AdamAdvancePowers(DeviceScalar beta1_pow, DeviceScalar beta2_pow, AdamAttrs attrs,
                       void* beta1_pow_out, void* beta2_pow_out, cudaStream_t stream) {
  AdamAdvancePowersKernel<<<1, 1, 0, stream>>>(beta1_pow, beta2_pow, attrs, beta1_pow_out,
                                               beta2_pow_out);
}

template void Sgd<float>(const float*, const float*, DeviceScalar, float*, int64_t, cudaStream_t);
template void Sgd<double>(const double*, const double*, DeviceScalar, double*, int64_t,
                          cudaStream_t);
template void Momentum<float>(const float*, const float*, const float*, DeviceScalar, double, bool,
                              float*, float*, int64_t, cudaStream_t);
template void Momentum<double>(const double*, const double*, const double*, DeviceScalar, double,
                               bool, double*, double*, int64_t, cudaStream_t);
template void Adam<float>(const float*, const float*, const float*, const float*, DeviceScalar,
                          DeviceScalar, DeviceScalar, AdamAttrs, float*, float*, float*, int64_t,
                          cudaStream_t);
template void Adam<double>(const double*, const double*, const double*, const double*, DeviceScalar,
                           DeviceScalar, DeviceScalar, AdamAttrs, double*, double*, double*,
                           int64_t, cudaStream_t);

}  // namespace rill::cuda
