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
    if (op.place < 0) {  // a collective: its work is spread over every place's streams
      double ready_at = 0;
      for (int pred : op.predecessors) ready_at = std::max(ready_at, finish[pred] + kCrossStreamNs);
      op.stream = 0;
      finish[op.id] = ready_at + op.cost_ns / static_cast<double>(places);
      continue;
    }
    // ready[s]: when all inputs could be on stream s.
    std::fill(ready.begin(), ready.end(), 0.0);
    for (int pred : op.predecessors) {
      const OpNode& p = graph->ops[pred];
      for (int s = 0; s < streams; ++s) {
        const bool same = p.place == op.place && p.stream == s;
        const double at = finish[pred] + (same ? 0 : kCrossStreamNs);
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
