// MergeScheduler: how a gradient merge runs once its barrier opens. The
// collective node's countdown waits for the gradient from every place; the
// arrival that opens it hands the merge here. On CPU places (and device
// places without NCCL) each place then reduces one chunk of the bucket, on
// its own stream and in the global merge order (merge_order.h), and the last
// chunk to finish completes the collective node; with NCCL the merge is one
// grouped allreduce on the communication streams. The arithmetic is
// GradientMerger's (gradient_merge.h), device launches DeviceLauncher's.
//
// Threads: Issue runs on whichever thread opened the barrier, RunChunk on the
// drainer of the chunk's stream; a merge's state in a slot is touched by its
// chunks only, on disjoint ranges, ordered by the merge's countdowns.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "actors/executor/built_graph.h"
#include "actors/executor/device_launcher.h"
#include "actors/executor/gradient_merge.h"
#include "actors/executor/graph_tracer.h"
#include "actors/executor/iteration_slot.h"
#include "actors/executor/stream.h"
#include "actors/executor/task.h"

namespace rill {

class ActorGraph;

class MergeScheduler {
 public:
  // The parts are the graph's, and outlive the scheduler.
  MergeScheduler(ActorGraph& graph, const BuiltGraph& built,
                 const std::vector<std::unique_ptr<Stream>>& streams, DeviceLauncher& devices,
                 GradientMerger& merger, const GraphTracer& tracer);

  // `task` (a collective node) is ready in `slot`'s iteration `generation`:
  // prepares its merge and hands each place its chunk, or runs it on NCCL.
  void Issue(Task* task, IterationSlot& slot, uint32_t generation);
  // One place's chunk of a merge, on that place's `stream`; the last chunk
  // completes the collective node.
  void RunChunk(Task* chunk, Stream& stream, IterationSlot& slot, uint32_t generation);

 private:
  void IssueOnNccl(Task* task, const GradientMerge& merge, IterationSlot& slot,
                   uint32_t generation);

  ActorGraph& graph_;
  const BuiltGraph& built_;
  const std::vector<std::unique_ptr<Stream>>& streams_;
  DeviceLauncher& devices_;
  GradientMerger& merger_;
  const GraphTracer& tracer_;
};

}  // namespace rill
