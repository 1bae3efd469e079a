// GraphTracer: what an actor graph records while a TraceRecorder is on. When
// the graph is built it registers the graph and its lanes — one per op node,
// stream, merge and merge chunk, and a driver lane for its iterations — and,
// for iterations that begin while the recorder is on, records each kernel's
// span, one message per graph edge when a node completes (`data` when a
// variable's value travels on it, with its size; `control` for a hazard
// edge), wakes, chunk messages from a merge to each place, and waits (format:
// actors/trace/trace_format.md).
//
// With no recorder (`on()` false) nothing is registered and a task tests one
// flag of its iteration (IterationSlot::traced). Threads: Register before the
// graph is shared; the rest from any thread (the recorder's per-thread buffers).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/executor/built_graph.h"
#include "actors/executor/iteration_slot.h"
#include "actors/executor/stream.h"
#include "actors/trace/trace_context.h"
#include "rill/execution_strategy.h"
#include "rill/trace_recorder.h"

namespace rill {

class GraphTracer {
 public:
  // Registers `graph` and its lanes with strategy.trace (nothing when null).
  GraphTracer(const BuiltGraph& graph, const std::vector<std::unique_ptr<Stream>>& streams,
              const ExecutionStrategy& strategy);

  // Whether a recorder is attached (it may still be switched off).
  bool attached() const { return trace_ != nullptr; }
  // Whether an iteration beginning now is recorded.
  bool on() const { return trace_ != nullptr && trace_->on(); }
  // Each edge's variable in `slot` (for the bytes of data messages).
  void PrepareSlot(IterationSlot& slot) const;

  int lane(int node) const { return lanes_[static_cast<size_t>(node)]; }
  int chunk_lane(int merge, int place) const;
  int driver_lane() const { return driver_lane_; }
  // The context a thread records on while it runs `lane`'s work in `slot`'s iteration.
  TraceContext Context(int lane, const IterationSlot& slot) const {
    return {trace_, lane, graph_, slot.iteration, 0};
  }

  // A span (kernel, merge) of `node` on `lane` ending now, which becomes the
  // thread's trace context (what the lane sends next leaves from it). A
  // merge's span carries its bytes as merged and as float32.
  void Span(TraceEventKind kind, int lane, int node, int stream_index, int64_t begin_ns,
            const IterationSlot& slot, int64_t bytes = 0, int64_t raw_bytes = 0) const;
  // The readiness messages of a completed node to its successors; `device`:
  // the node's outputs are written later, on a device stream (no bytes).
  void Sends(const Task& task, const IterationSlot& slot, bool device) const;
  // A merge was issued: one chunk message to each place.
  void ChunkMessages(const GradientMerge& merge, MergeState& state,
                     const IterationSlot& slot) const;
  void Iteration(const IterationSlot& slot) const;
  void WakeReceived(const Stream& stream, uint32_t id, int64_t begin_ns) const;
  // A wait of the graph's driver from `begin_ns` to now, in `iteration`.
  void DriverWait(WaitKind kind, const std::string& what, int64_t begin_ns, int iteration) const;

 private:
  void RegisterNodes(TraceGraph& tg, const std::string& prefix);
  void RegisterEdges(TraceGraph& tg);

  const BuiltGraph& graph_built_;
  const ExecutionStrategy::TraceParent parent_;
  TraceRecorder* trace_ = nullptr;
  int graph_ = 0;
  int driver_lane_ = 0;
  std::vector<int> lanes_;            // by node
  std::vector<int> chunk_lanes_;      // by merge order * places + place
  std::vector<int32_t> edge_detail_;  // parallel to successor_list: the variable
  std::vector<uint8_t> edge_control_;
  std::vector<int> edge_var_;  // parallel to successor_list: its var node, -1 for none
};

}  // namespace rill
