// The per-channel loops batch_norm and sync_batch_norm share, forward and
// backward (X seen as [n, c, hw], batch_norm_util.h's BatchNormDims).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/math/lane_sum.h"
#include "ops/nn/batch_norm_util.h"
#include "rill/kernel_context.h"
#include "rill/parallel_for.h"

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

// body(c) for every channel c, in runs of whole channels that idle executor
// threads may take (ParallelFor): a channel's sums stay one loop on one
// thread, so the bits are those of one loop over the channels.
template <class Body>
void ForEachChannel(const BatchNormDims& d, Body body) {
  const int64_t values = std::max<int64_t>(1, d.n * d.hw);
  ParallelRanges(d.c, std::max<int64_t>(1, kMinValuesPerPart / values), 1,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t c = begin; c < end; ++c) body(c);
                 });
}

// out[i] = a[c] * u[i] + b[c] * v[i] + k[c] over X's layout (v may be null:
// 0), in runs of planes (one image's channel) that idle threads may take.
template <class T>
void ChannelAffine(const BatchNormDims& d, const T* a, const T* u, const T* b, const T* v,
                   const T* k, T* out) {
  const int64_t planes_per_part =
      std::max<int64_t>(1, kMinValuesPerPart / std::max<int64_t>(1, d.hw));
  ParallelRanges(d.n * d.c, planes_per_part, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t c = plane % d.c;
      const int64_t base = plane * d.hw;
      const T ac = a[c], kc = k[c];
      if (v == nullptr) {
        for (int64_t i = 0; i < d.hw; ++i) out[base + i] = ac * u[base + i] + kc;
      } else {
        const T bc = b[c];
        for (int64_t i = 0; i < d.hw; ++i) out[base + i] = ac * u[base + i] + bc * v[base + i] + kc;
      }
    }
  });
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

// This place's per-channel sums of dY and of dY * (X - mean), zeros when
// Y@GRAD is absent: what batch_norm's gradient (and sync_batch_norm's, after
// summing them over the places) is made of.
template <class T>
void BatchNormGradSums(const BatchNormBackward& b, std::vector<T>* sum_dy,
                       std::vector<T>* sum_dy_xmu) {
  const BatchNormDims& d = b.dims;
  sum_dy->assign(static_cast<size_t>(d.c), T(0));
  sum_dy_xmu->assign(static_cast<size_t>(d.c), T(0));
  if (b.dy == nullptr) return;
  const T* x = b.x->data<T>();
  const T* dy = b.dy->data<T>();
  const T* mean = b.saved_mean->data<T>();
  ForEachChannel(d, [&](int64_t c) {
    const T m = mean[c];
    (*sum_dy)[c] = ChannelSum<T>(d, c, [&](int64_t i) { return dy[i]; });
    (*sum_dy_xmu)[c] = ChannelSum<T>(d, c, [&](int64_t i) { return dy[i] * (x[i] - m); });
  });
}

// Scale@GRAD = sum(dY * xhat) and Bias@GRAD = sum(dY) per channel, into
// those of the two outputs that are bound.
template <class T>
void WriteBatchNormParamGrads(KernelContext& ctx, const BatchNormBackward& b,
                              const std::vector<T>& sum_dy, const std::vector<T>& sum_dy_xmu) {
  const int64_t c = b.dims.c;
  const T* inv_std = b.saved_inv_std->data<T>();
  if (ctx.HasOutput("Scale@GRAD")) {
    T* ds = ctx.Output("Scale@GRAD")->Allocate<T>({c});
    for (int64_t ch = 0; ch < c; ++ch) ds[ch] = sum_dy_xmu[ch] * inv_std[ch];
  }
  if (ctx.HasOutput("Bias@GRAD")) {
    T* db = ctx.Output("Bias@GRAD")->Allocate<T>({c});
    for (int64_t ch = 0; ch < c; ++ch) db[ch] = sum_dy[ch];
  }
}

// X@GRAD from the per-channel sums over `count` elements each: in training
// Scale * inv_std * (dY - sum(dY) / count - xhat * sum(dY * xhat) / count),
// in inference Scale * inv_std * dY; zeros when Y@GRAD is absent. Allocates
// X@GRAD after the inputs' pointers were taken: it may be Y@GRAD.
template <class T>
void WriteBatchNormInputGrad(const BatchNormBackward& b, const std::vector<T>& sum_dy,
                             const std::vector<T>& sum_dy_xmu, T count, Tensor* dx_t) {
  const BatchNormDims& d = b.dims;
  const size_t c = static_cast<size_t>(d.c);
  const T* scale = b.scale->data<T>();
  const T* mean = b.saved_mean->data<T>();
  const T* inv_std = b.saved_inv_std->data<T>();
  std::vector<T> a(c), slope(c), k(c);
  for (size_t ch = 0; ch < c; ++ch) {
    a[ch] = scale[ch] * inv_std[ch];
    slope[ch] = b.is_test ? T(0) : -a[ch] * inv_std[ch] * inv_std[ch] * sum_dy_xmu[ch] / count;
    k[ch] = b.is_test ? T(0) : -a[ch] * sum_dy[ch] / count - slope[ch] * mean[ch];
  }
  const T* dy = b.dy ? b.dy->data<T>() : nullptr;
  const T* x = b.x->data<T>();
  T* dx = dx_t->Allocate<T>(b.x->shape());
  if (dy == nullptr) {
    std::fill(dx, dx + dx_t->numel(), T(0));
    return;
  }
  ChannelAffine<T>(d, a.data(), dy, slope.data(), b.is_test ? nullptr : x, k.data(), dx);
}

}  // namespace rill
