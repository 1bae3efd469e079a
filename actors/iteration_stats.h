// Counters the actor executor keeps about the last iteration it finished.
#pragma once

namespace rill {

struct IterationStats {
  int collectives = 0;  // gradient merges issued (one per bucket of gradients)
  // Merges issued while backward ops were still pending on some place:
  // merging overlapped the rest of backward.
  int collectives_overlapping_backward = 0;
};

}  // namespace rill
