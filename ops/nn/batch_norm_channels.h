// The per-channel loops batch_norm and sync_batch_norm share (X seen as
// [n, c, hw], batch_norm_util.h's BatchNormDims).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/nn/batch_norm_util.h"
#include "ops/nn/lane_sum.h"
#include "rill/kernel_context.h"

namespace rill {

// Sum over channel c's elements (every image, the whole plane) of term(i), i
// an index into X.
template <class T, class Term>
T ChannelSum(const BatchNormDims& d, int64_t c, Term term) {
  T total = T(0);
  for (int64_t n = 0; n < d.n; ++n) {
    const int64_t base = (n * d.c + c) * d.hw;
    total += LaneSum<T>(d.hw, [&](int64_t i) { return term(base + i); });
  }
  return total;
}

// out[i] = a[c] * u[i] + b[c] * v[i] + k[c] over X's layout (v may be null: 0).
template <class T>
void ChannelAffine(const BatchNormDims& d, const T* a, const T* u, const T* b, const T* v,
                   const T* k, T* out) {
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t c = 0; c < d.c; ++c) {
      const int64_t base = (n * d.c + c) * d.hw;
      const T ac = a[c], kc = k[c];
      if (v == nullptr) {
        for (int64_t i = 0; i < d.hw; ++i) out[base + i] = ac * u[base + i] + kc;
      } else {
        const T bc = b[c];
        for (int64_t i = 0; i < d.hw; ++i) out[base + i] = ac * u[base + i] + bc * v[base + i] + kc;
      }
    }
  }
}

// The outputs of batch_norm and sync_batch_norm once `mean` and `var` (the
// statistics that normalise: the batch's, or in inference the running ones)
// are known: Y = Scale * (X - mean) / sqrt(var + epsilon) + Bias, the running
// statistics moved towards mean and var with `momentum` (kept in inference),
// and SavedMean / SavedVariance (the inverse standard deviation). The
// running statistics are copies taken before any output was allocated
// (MeanOut is Mean, VarianceOut Variance).
template <class T>
void WriteBatchNormOutputs(KernelContext& ctx, const BatchNormForward& f,
                           const std::vector<T>& running_mean, const std::vector<T>& running_var,
                           const std::vector<T>& mean, const std::vector<T>& var) {
  const BatchNormDims& d = f.dims;
  const size_t c = static_cast<size_t>(d.c);
  const T* scale = f.scale->data<T>();
  const T* bias = f.bias->data<T>();
  std::vector<T> inv_std(c), a(c), k(c);
  for (size_t ch = 0; ch < c; ++ch) {
    inv_std[ch] = T(1) / std::sqrt(var[ch] + static_cast<T>(f.epsilon));
    a[ch] = scale[ch] * inv_std[ch];
    k[ch] = bias[ch] - mean[ch] * a[ch];
  }
  T* y = ctx.Output("Y")->Allocate<T>(f.x->shape());
  ChannelAffine<T>(d, a.data(), f.x->data<T>(), nullptr, nullptr, k.data(), y);
  const T momentum = static_cast<T>(f.momentum);
  T* mean_out = ctx.Output("MeanOut")->Allocate<T>({d.c});
  T* var_out = ctx.Output("VarianceOut")->Allocate<T>({d.c});
  T* saved_mean = ctx.Output("SavedMean")->Allocate<T>({d.c});
  T* saved_inv_std = ctx.Output("SavedVariance")->Allocate<T>({d.c});
  for (size_t ch = 0; ch < c; ++ch) {
    if (f.is_test) {
      mean_out[ch] = running_mean[ch];
      var_out[ch] = running_var[ch];
    } else {
      mean_out[ch] = momentum * running_mean[ch] + (T(1) - momentum) * mean[ch];
      var_out[ch] = momentum * running_var[ch] + (T(1) - momentum) * var[ch];
    }
    saved_mean[ch] = mean[ch];
    saved_inv_std[ch] = inv_std[ch];
  }
}

}  // namespace rill
