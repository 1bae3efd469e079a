// The SSA graph a ParallelExecutor runs: for tests and tools that look at
// its nodes and edges. Not part of the public API.
#pragma once

#include "rill/parallel_executor.h"
#include "runtime/graph/ssa_graph.h"

namespace rill {

const SsaGraph& GraphOf(const ParallelExecutor& executor);

}  // namespace rill
