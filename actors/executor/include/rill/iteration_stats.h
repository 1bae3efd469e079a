// Counters the actor executor keeps about the last iteration it finished.
#pragma once

#include <cstdint>

namespace rill {

struct IterationStats {
  int collectives = 0;  // gradient merges issued (one per bucket of gradients)
  // Merges issued while backward ops were still pending on some place:
  // merging overlapped the rest of backward.
  int collectives_overlapping_backward = 0;
  // Bytes of the places' contributions to the gradient merges: as float32,
  // and as merged (the codes and scales of compressed gradients, the rest as
  // float32; selected rows' indices count in both).
  int64_t merge_bytes_raw = 0;
  int64_t merge_bytes = 0;
};

}  // namespace rill
