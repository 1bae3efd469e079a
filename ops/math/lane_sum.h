// LaneSum: a sum written with kSumLanes independent accumulators, so that the
// compiler vectorises it without -ffast-math (one accumulator is a serial
// chain it may not reorder). The result depends only on n and the terms, in a
// fixed order: every executor and thread computes the same bits.
// Used by the normalisation ops (batch_norm, layer_norm) and for the chunks
// of the binary ops' broadcast gradients (broadcast_sum.h). Stateless.
#pragma once

#include <cstdint>

namespace rill {

inline constexpr int kSumLanes = 8;

// Sum of term(i) for i in [0, n).
template <class T, class Term>
T LaneSum(int64_t n, Term term) {
  T lanes[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int k = 0; k < kSumLanes; ++k) lanes[k] += term(i + k);
  }
  T total = T(0);
  for (; i < n; ++i) total += term(i);
  for (int k = 0; k < kSumLanes; ++k) total += lanes[k];
  return total;
}

}  // namespace rill
