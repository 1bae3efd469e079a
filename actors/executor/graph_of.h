// The SSA graph a ParallelExecutor runs and how long building it took: for
// tests and tools that look at its nodes and edges, or time its build. Not
// part of the public API.
#pragma once

#include "actors/executor/build_times.h"
#include "rill/parallel_executor.h"
#include "runtime/graph/ssa_graph.h"

namespace rill {

const SsaGraph& GraphOf(const ParallelExecutor& executor);
// Each build step's time; runtime_ms is 0 when the executor was given a runtime.
BuildTimes BuildTimesOf(const ParallelExecutor& executor);

}  // namespace rill
