// Printing an SsaGraph: Graphviz DOT (one cluster per place, ops as boxes
// labelled with type and stream, variable versions as ellipses "name v2",
// control edges dashed) and a short table of counts.
#pragma once

#include <ostream>

#include "runtime/graph/ssa_graph.h"

namespace rill {

void WriteDot(const SsaGraph& graph, std::ostream& out);

// Node and edge counts, per place and per stream.
void WriteStats(const SsaGraph& graph, std::ostream& out);

}  // namespace rill
