// Picks the stream every op runs on, per place, by list scheduling over the
// estimated op costs: in topological order, each op goes to the stream where
// it could start earliest, where waiting for a producer on another stream
// costs kCrossStreamNs extra. Chains of cheap ops thus stay on one stream
// (they run inline, one after the other), and only work large enough to pay
// for a hand-off is spread over the streams.
#pragma once

#include "runtime/graph/ssa_graph.h"

namespace rill {

// Sets OpNode::stream for every op; needs cost_ns set. Deterministic.
void AssignStreams(SsaGraph* graph);

}  // namespace rill
