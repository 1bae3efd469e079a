// TraceWindow: the part of a recorder's tables that a window of time covers,
// for a file of only what ran while tracing was last switched on (rill.trace
// in Python, around some steps of executors built earlier). Only the graphs
// with an event in the window are kept, with their lanes (and lanes of no
// graph that an event names), renumbered in the order they were registered:
// graph 0 is the first of them, as in a file of a recorder made for them
// (lane names too: "graph G: " prefixes of top-level graphs follow their G).
// Pure functions of their arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/trace_recorder.h"

namespace rill {

struct TraceTables {
  std::vector<TraceEvent> events;
  std::vector<TraceLane> lanes;  // lane id i + 1 at index i
  std::vector<TraceGraph> graphs;
};

// The events that began at or after `since_ns` (a receive: with its message),
// and the lanes and graphs they belong to, with every lane and graph id
// renumbered.
TraceTables TraceWindow(const TraceTables& all, int64_t since_ns);

}  // namespace rill
