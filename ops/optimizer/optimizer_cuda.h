// CUDA kernels of the optimizer ops (sgd, momentum, adam, adamw; dense gradients), as
// plain launchers: this header is included by optimizer_cuda.cu (nvcc, C++17)
// and by the kernels' glue in optimizer_op_cuda.cc (C++20), so it holds only
// what both read alike.
//
// The one-element inputs (LearningRate, Beta1Pow, Beta2Pow) stay on the
// device: the kernels read them there (DeviceScalar), widening a float32 one
// as the CPU's ReadScalar does (DecimalDouble, optimizer_util.h). Outputs may
// be their inputs (in place, the usual case) or separate buffers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/optimizer/warmup_cosine.h"

namespace rill::cuda {

// A one-element float32 (is_double false) or float64 tensor in device memory.
struct DeviceScalar {
  const void* data = nullptr;
  bool is_double = false;
};

// p_out = p - lr * g
template <class T>
void Sgd(const T* p, const T* g, DeviceScalar lr, T* p_out, int64_t n, cudaStream_t stream);

// v_out = mu * v + g; p_out = p - lr * v_out (nesterov: p - lr * (g + mu * v_out)).
// `mu` is the attribute as the CPU kernel widens it (DecimalDouble).
template <class T>
void Momentum(const T* p, const T* v, const T* g, DeviceScalar lr, double mu, bool nesterov,
              T* p_out, T* v_out, int64_t n, cudaStream_t stream);

// Adam's decays, epsilon and (adamw) decoupled weight decay, as the CPU
// kernel widens them (DecimalDouble).
struct AdamAttrs {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0;  // 0 for adam
};

// m_out = b1 m + (1 - b1) g; v_out = b2 v + (1 - b2) g g;
// p_out = p * (1 - lr wd) - lr / (1 - b1^t) * m_out / (sqrt(v_out) / sqrt(1 - b2^t) + eps),
// in the CPU kernel's order of operations (adam_update.cc); the factor is
// exactly 1 for adam.
template <class T>
void Adam(const T* p, const T* m, const T* v, const T* g, DeviceScalar lr, DeviceScalar beta1_pow,
          DeviceScalar beta2_pow, AdamAttrs attrs, T* p_out, T* m_out, T* v_out, int64_t n,
          cudaStream_t stream);

// beta1_pow_out = beta1_pow * beta1, beta2_pow_out = beta2_pow * beta2 (in
// double, stored in each output's own type: that of its input). Launch after
// Adam: the outputs are usually the inputs Adam reads.
void AdamAdvancePowers(DeviceScalar beta1_pow, DeviceScalar beta2_pow, AdamAttrs attrs,
                       void* beta1_pow_out, void* beta2_pow_out, cudaStream_t stream);

// warmup_cosine_decay: out (BaseRate's type: out_double) = WarmupCosineRate
// of the device scalars `base` and `step`.
void WarmupCosine(DeviceScalar step, DeviceScalar base, WarmupCosineAttrs attrs, void* out,
                  bool out_double, cudaStream_t stream);

}  // namespace rill::cuda
