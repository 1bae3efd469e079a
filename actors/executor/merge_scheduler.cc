#include "actors/executor/merge_scheduler.h"

#include "actors/executor/actor_graph.h"

namespace rill {

MergeScheduler::MergeScheduler(ActorGraph& graph, const BuiltGraph& built,
                               const std::vector<std::unique_ptr<Stream>>& streams,
                               DeviceLauncher& devices, GradientMerger& merger,
                               const GraphTracer& tracer)
    : graph_(graph),
      built_(built),
      streams_(streams),
      devices_(devices),
      merger_(merger),
      tracer_(tracer) {}

void MergeScheduler::Issue(Task* task, IterationSlot& slot, uint32_t generation) {
  const GradientMerge& merge = built_.merges[built_.nodes[task->node].merge];
  MergeState& state = slot.merges[merge.order];
  if (!devices_.nccl() && devices_.any()) devices_.WaitForGradients(merge, slot);
  if (slot.backward_pending.load(std::memory_order_relaxed) > 0) {
    slot.overlapped.fetch_add(1, std::memory_order_relaxed);
  }
  if (devices_.nccl()) return IssueOnNccl(task, merge, slot, generation);
  if (slot.traced) tracer_.ChunkMessages(merge, state, slot);
  merger_.Prepare(merge, state, !slot.cancelled.load(std::memory_order_relaxed));
  const int n = built_.places();
  state.chunks_left.Reset(generation, static_cast<uint32_t>(n));
  for (int p = 0; p < n; ++p) {
    Task* chunk = &state.chunks[p];
    chunk->countdown.Reset(generation, 0);
    // Every place runs its merges in their global order.
    if (slot.orders[p]->Arrive(merge.order, chunk)) streams_[chunk->stream]->SubmitUrgent(chunk);
  }
}

void MergeScheduler::IssueOnNccl(Task* task, const GradientMerge& merge, IterationSlot& slot,
                                 uint32_t generation) {
  MergeState& state = slot.merges[merge.order];
  const bool traced = slot.traced;
  if (traced) state.issued_ns = TraceRecorder::Now();
  state.raw_bytes = state.merged_bytes = 0;
  if (!slot.cancelled.load(std::memory_order_relaxed)) {
    graph_.RunOrFail(slot, merge.node,
                     [&] { devices_.AllReduceOnNccl(merge, state, slot, merger_); });
  }
  if (traced) {
    tracer_.Span(TraceEventKind::kCollective, tracer_.lane(merge.node), merge.node, -1,
                 state.issued_ns, slot, state.merged_bytes, state.raw_bytes);
  }
  graph_.Complete(task, slot, generation, nullptr);
}

void MergeScheduler::RunChunk(Task* chunk, Stream& stream, IterationSlot& slot,
                              uint32_t generation) {
  const int p = chunk->place;
  const GradientMerge& merge = built_.merges[built_.nodes[chunk->node].merge];
  MergeState& state = slot.merges[merge.order];
  // This place's next merge may queue behind this one now.
  if (Task* next = slot.orders[p]->Start(merge.order)) streams_[next->stream]->SubmitUrgent(next);
  const bool traced = slot.traced;  // the slot may be reused once the last chunk completes
  const int64_t began = traced ? TraceRecorder::Now() : 0;
  if (!slot.cancelled.load(std::memory_order_relaxed)) {
    stream.SetRunning(merge.node);
    auto reduce = [this, &merge, &state, &slot, p] {
      if (slot.cancelled.load(std::memory_order_relaxed)) return;
      graph_.RunOrFail(slot, merge.node, [&] { merger_.ReduceChunk(merge, state, p); });
    };
    if (!devices_.LaunchChunk(*chunk, merge, slot, reduce)) reduce();
    stream.SetRunning(-1);
    if (traced) {
      tracer_.Span(TraceEventKind::kKernel, tracer_.chunk_lane(merge.order, p), merge.node,
                   stream.index_in_place(), began, slot);
    }
  }
  stream.CountExecuted();
  if (state.chunks_left.Arrive(generation) == Countdown::Arrival::kReady) {
    if (traced) {
      tracer_.Span(TraceEventKind::kCollective, tracer_.lane(merge.node), merge.node, -1,
                   state.issued_ns, slot, state.merged_bytes, state.raw_bytes);
    }
    graph_.Complete(&slot.tasks[merge.node], slot, generation, &stream);
  }
  if (traced) CurrentTrace() = {};
}

}  // namespace rill
