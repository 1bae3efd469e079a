// The critical path of one iteration of one graph in a trace: the chain of
// ops that ended last.
//
// A node's time in the iteration is the span of its events there (cat
// `kernel`, or `collective`: a collective node's chunks and its own
// release-to-end event). The walk starts at the node that ended last and
// steps, while it can, to the predecessor that ended last among those that
// ran in the iteration. Predecessors are the `from` of the graph's edges
// (rill.graphs[G].edges) and, with PathEdges::kGraphAndStreamOrder, also the
// op that last ended before it on one of its streams: ops of a stream run one
// at a time, so an op ready early can still wait for its stream.
// Length = end of the last node - start of the first = kernels + waits, where
// a node's wait is its start minus its chosen predecessor's end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/rill/trace_file.h"

namespace rill::trace {

struct CriticalPathStep {
  int64_t node = 0;
  std::string type;
  int64_t place = kNone;
  int64_t stream = kNone;
  double start_us = 0;  // from the iteration's start
  double dur_us = 0;
  double wait_us = 0;  // start - the previous step's end; 0 for the first step
  std::string via;     // how the previous step precedes it: "edge" or "stream"; "" first
};

enum class PathEdges {
  kGraph,                // the graph's edges only
  kGraphAndStreamOrder,  // and each stream's order of ops
};

struct CriticalPath {
  int64_t graph = 0;
  int64_t iteration = 0;
  bool stream_order = false;  // walked PathEdges::kGraphAndStreamOrder
  double length_us = 0;
  double iteration_us = -1;  // the driver's `iteration` event; -1 when there is none
  double kernels_us = 0;
  double waits_us = 0;
  std::vector<CriticalPathStep> steps;  // first op to last
};

// The iteration of `graph` whose `iteration` event has the median duration
// (the lower median, ties broken by iteration number); when the graph has no
// such events, the median by the span of its kernels. Throws rill::Error
// kNotFound when the graph has neither.
int64_t MedianIteration(const Trace& trace, int64_t graph);

// Throws rill::Error kNotFound when the graph is not in rill.graphs or none
// of its nodes ran in `iteration`.
CriticalPath FindCriticalPath(const Trace& trace, int64_t graph, int64_t iteration,
                              PathEdges edges = PathEdges::kGraph);

}  // namespace rill::trace
