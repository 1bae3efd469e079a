#include "runtime/graph/stream_assignment.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "runtime/graph/op_cost.h"

namespace rill {

void AssignStreams(SsaGraph* graph) {
  const int streams = graph->streams_per_place;
  if (streams == 1) {
    for (OpNode& op : graph->ops) op.stream = 0;
    return;
  }
  const size_t places = graph->places.size();
  std::vector<double> available(places * static_cast<size_t>(streams), 0.0);
  std::vector<double> finish(graph->ops.size(), 0.0);
  std::vector<double> ready(static_cast<size_t>(streams));
  for (OpNode& op : graph->ops) {  // ops are in a topological order
    // ready[s]: when all inputs could be on stream s.
    std::fill(ready.begin(), ready.end(), 0.0);
    for (int pred : op.predecessors) {
      const OpNode& p = graph->ops[pred];
      for (int s = 0; s < streams; ++s) {
        const double at = finish[pred] + (p.place == op.place && p.stream == s ? 0 : kCrossStreamNs);
        ready[s] = std::max(ready[s], at);
      }
    }
    double* avail = &available[static_cast<size_t>(op.place) * streams];
    int best = 0;
    double best_start = std::numeric_limits<double>::infinity();
    for (int s = 0; s < streams; ++s) {
      const double start = std::max(avail[s], ready[s]);
      if (start < best_start) {
        best = s;
        best_start = start;
      }
    }
    op.stream = best;
    finish[op.id] = best_start + op.cost_ns;
    avail[best] = finish[op.id];
  }
}

}  // namespace rill
