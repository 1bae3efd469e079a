#include "ops/nn/pool2x2.h"

#include <algorithm>
#include <cstdint>

namespace rill {
namespace {

// The largest of the four by the same rule, branch-free so the row loops vectorise.
template <class T>
T Max4(T a, T b, T c, T d) {
  T best = a;
  best = b > best ? b : best;
  best = c > best ? c : best;
  return d > best ? d : best;
}

}  // namespace

bool IsPool2x2(const PoolGeometry& g) {
  return g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 &&
         g.pad_w == 0 && g.dilation_h == 1 && g.dilation_w == 1;
}

template <class T>
void Pool2x2Forward(const PoolGeometry& g, const T* x, T* out) {
  const int64_t planes = g.batch * g.channels;
  const int64_t w = g.width;
  for (int64_t c = 0; c < planes; ++c) {
    const T* plane = x + c * g.height * w;
    T* o_plane = out + c * g.out_h * g.out_w;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      const T* r0 = plane + 2 * oy * w;
      const T* r1 = r0 + w;
      T* o = o_plane + oy * g.out_w;
      if (g.is_max) {
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          o[ox] = Max4(r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]);
        }
      } else {
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          T sum = T(0);
          sum += r0[2 * ox];
          sum += r0[2 * ox + 1];
          sum += r1[2 * ox];
          sum += r1[2 * ox + 1];
          o[ox] = sum / T(4);
        }
      }
    }
  }
}

template <class T>
void Pool2x2Backward(const PoolGeometry& g, const T* x, const T* dout, T* dx) {
  const int64_t planes = g.batch * g.channels;
  const int64_t w = g.width;
  const int64_t covered_w = 2 * g.out_w;
  for (int64_t p = 0; p < planes; ++p) {
    const T* plane = x == nullptr ? nullptr : x + p * g.height * w;
    T* d_plane = dx + p * g.height * w;
    const T* dy = dout + p * g.out_h * g.out_w;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      T* d0 = d_plane + 2 * oy * w;
      T* d1 = d0 + w;
      const T* dy_row = dy + oy * g.out_w;
      if (g.is_max) {
        const T* r0 = plane + 2 * oy * w;
        const T* r1 = r0 + w;
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
          // The window's winner is the first cell equal to its maximum, or the
          // first cell when that is NaN (only a leading NaN survives Max4):
          // the general kernel's argmax. Bitwise & and |, not && and ||: no
          // branches (random data mispredicts them, 10x slower) and the loop
          // vectorises.
          const T best = Max4(a, b, c, d);
          const bool nan = best != best;
          const bool take0 = (a == best) | nan;
          const bool take1 = (b == best) & !take0;
          const bool take2 = (c == best) & !(take0 | take1);
          const bool take3 = !(take0 | take1 | take2);
          const T share = T(0) + dy_row[ox];  // as the general kernel's += onto zero
          d0[2 * ox] = take0 ? share : T(0);
          d0[2 * ox + 1] = take1 ? share : T(0);
          d1[2 * ox] = take2 ? share : T(0);
          d1[2 * ox + 1] = take3 ? share : T(0);
        }
      } else {
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          const T share = T(0) + dy_row[ox] / T(4);
          d0[2 * ox] = d0[2 * ox + 1] = d1[2 * ox] = d1[2 * ox + 1] = share;
        }
      }
      std::fill(d0 + covered_w, d0 + w, T(0));
      std::fill(d1 + covered_w, d1 + w, T(0));
    }
    std::fill(d_plane + 2 * g.out_h * w, d_plane + g.height * w, T(0));
  }
}

template void Pool2x2Forward<float>(const PoolGeometry&, const float*, float*);
template void Pool2x2Forward<double>(const PoolGeometry&, const double*, double*);
template void Pool2x2Backward<float>(const PoolGeometry&, const float*, const float*, float*);
template void Pool2x2Backward<double>(const PoolGeometry&, const double*, const double*, double*);

}  // namespace rill
