#include "actors/executor/async_ops.h"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/channels/fiber_pool.h"
#include "actors/executor/actor_graph.h"
#include "actors/executor/block_runner.h"
#include "actors/executor/graph_actors.h"
#include "actors/executor/messages.h"
#include "actors/executor/runtime_internals.h"
#include "rill/op_actor.h"
#include "rill/op_desc.h"

namespace rill {

AsyncOps::AsyncOps(ActorGraph& graph, const BuiltGraph& built, Runtime& runtime)
    : graph_(graph), built_(built), runtime_(runtime) {}

void AsyncOps::PrepareSlot(IterationSlot& slot, const std::shared_ptr<TraceRecorder>& trace) {
  const proto::BlockDesc& block = built_.plan.program().blocks(built_.block_index());
  slot.block_runners.resize(built_.ssa.ops.size());
  for (const OpNode& op : built_.ssa.ops) {
    if (built_.nodes[op.id].kind != TaskKind::kBlock) continue;
    const proto::OpDesc& desc = block.ops(op.op_index);
    const proto::Attr* forward = FindAttr(desc, "forward_block");
    const proto::Attr* sub = FindAttr(desc, "sub_block");
    const int key = forward != nullptr ? forward->block() : sub->block();
    const proto::Attr* count = FindAttr(desc, "places");
    const int block_places = count != nullptr ? static_cast<int>(count->i()) : 1;
    Scope* outer = slot.place_scopes[op.place];
    auto& scopes = slot.block_scopes[key];
    if (scopes.empty()) {
      for (int p = 0; p < block_places; ++p) scopes.push_back(std::make_unique<Scope>(outer));
    }
    std::vector<Scope*> raw;
    for (auto& s : scopes) raw.push_back(s.get());
    slot.block_runners[op.id] = std::make_unique<BlockRunner>(
        &runtime_, built_.plan.program(), desc, outer, raw, trace,
        graph_.tracer().attached() ? graph_.tracer().lane(op.id) : -1);
  }
}

void AsyncOps::SpawnActors(std::weak_ptr<ActorGraph> owner) {
  caf::actor_system& system = ActorSystemOf(runtime_);
  op_actors_.resize(built_.nodes.size());
  for (size_t n = 0; n < built_.nodes.size(); ++n) {
    const auto& factory = built_.nodes[n].actor;
    if (factory) op_actors_[n] = system.spawn<OpActorHost>(owner, (*factory)());
  }
}

void AsyncOps::StartFiber(Task* task, IterationSlot& slot, uint32_t generation) {
  if (slot.cancelled.load(std::memory_order_relaxed)) {
    graph_.Complete(task, slot, generation, nullptr);
    return;
  }
  // Read now: once the op completes, the iteration may end and the slot be reused.
  const GraphTracer& tracer = graph_.tracer();
  const TraceContext traced =
      slot.traced ? tracer.Context(tracer.lane(task->node), slot) : TraceContext{};
  // The inline attempt: done without a fiber when nothing needs waiting for.
  if (const TryKernelFn* attempt = built_.nodes[task->node].try_kernel) {
    const int64_t began = traced.recorder ? TraceRecorder::Now() : 0;
    bool done = true;  // a failed attempt is done too: the iteration has failed
    graph_.RunOrFail(slot, task->node, [&] { done = (*attempt)(*task->context); });
    if (done) {
      if (traced.recorder)
        tracer.Span(TraceEventKind::kKernel, traced.lane, task->node, -1, began, slot);
      graph_.Complete(task, slot, generation, nullptr);
      if (traced.recorder) CurrentTrace() = {};
      return;
    }
  }
  slot.outstanding.fetch_add(1, std::memory_order_acq_rel);
  fibers_running_.fetch_add(1, std::memory_order_acq_rel);
  // The fiber keeps the graph alive: it may end after a Shutdown gave up on it.
  FiberPoolOf(runtime_).Spawn(
      [self = graph_.shared_from_this(), this, task, &slot, generation, traced] {
        const int64_t began = traced.recorder ? TraceRecorder::Now() : 0;
        // Its channel waits are recorded on its lane (the context is the fiber's
        // thread's: set again by whichever fiber runs next there).
        if (traced.recorder) CurrentTrace() = traced;
        graph_.RunOrFail(slot, task->node, [task] { (*task->kernel)(*task->context); });
        if (traced.recorder) {
          graph_.tracer().Span(TraceEventKind::kKernel, traced.lane, task->node, -1, began, slot);
        }
        fibers_running_.fetch_sub(1, std::memory_order_acq_rel);
        progress_.fetch_add(1, std::memory_order_relaxed);
        // After an abort the graph's countdowns are stale: pass nothing on.
        if (!slot.aborted.load(std::memory_order_acquire)) {
          graph_.Complete(task, slot, generation, nullptr);
        }
        if (traced.recorder) CurrentTrace() = {};
        graph_.EndOutstanding(slot);
      });
}

void AsyncOps::StartGo(IterationSlot& slot, std::string what, std::function<void()> body) {
  slot.outstanding.fetch_add(1, std::memory_order_acq_rel);
  fibers_running_.fetch_add(1, std::memory_order_acq_rel);
  FiberPoolOf(runtime_).Spawn([self = graph_.shared_from_this(), this, &slot,
                               what = std::move(what), body = std::move(body)] {
    CurrentTrace() = {};  // a go block has no lane of its own
    if (std::exception_ptr error = RunGoBody(what, body)) slot.Fail(error);
    fibers_running_.fetch_sub(1, std::memory_order_acq_rel);
    progress_.fetch_add(1, std::memory_order_relaxed);
    graph_.EndOutstanding(slot);
  });
}

bool AsyncOps::BeginLater(Task* task, IterationSlot& slot, uint32_t generation) {
  if (slot.cancelled.load(std::memory_order_relaxed)) {
    graph_.Complete(task, slot, generation, nullptr);
    return false;
  }
  blocks_running_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void AsyncOps::EndLater(Task* task, IterationSlot& slot, uint32_t generation, bool traced,
                        int64_t began, std::exception_ptr error) {
  if (error) graph_.FailIteration(slot, task->node, error);
  blocks_running_.fetch_sub(1, std::memory_order_acq_rel);
  if (traced) {
    graph_.tracer().Span(TraceEventKind::kKernel, graph_.tracer().lane(task->node), task->node, -1,
                         began, slot);
  }
  graph_.Complete(task, slot, generation,
                  nullptr);  // may end the iteration: the slot is not ours after
  if (traced) CurrentTrace() = {};
}

// A block op is handed to its runner; it completes when the runner's places
// have all finished (on whichever thread finishes last).
void AsyncOps::StartBlock(Task* task, IterationSlot& slot, uint32_t generation) {
  if (!BeginLater(task, slot, generation)) return;
  BlockRunner* runner = slot.block_runners[task->node].get();
  const bool traced = slot.traced;
  const int64_t began = traced ? TraceRecorder::Now() : 0;
  runner->Start([this, task, &slot, generation, traced, began](std::exception_ptr error) {
    EndLater(task, slot, generation, traced, began, error);
  });
}

void AsyncOps::StartActorOp(Task* task, IterationSlot& slot, uint32_t generation) {
  if (!BeginLater(task, slot, generation)) return;
  caf::anon_send(op_actors_[task->node], run_op_atom::value, static_cast<int32_t>(slot.index),
                 static_cast<int32_t>(task->node), generation);
}

void AsyncOps::RunActorOp(int slot_index, int node, uint32_t generation, OpActor& op) {
  IterationSlot& slot = graph_.slot(slot_index);
  Task* task = &slot.tasks[node];
  if (slot.generation.load(std::memory_order_acquire) != generation) {  // left by an abort
    blocks_running_.fetch_sub(1, std::memory_order_acq_rel);
    return;
  }
  const bool traced = slot.traced;
  const int64_t began = traced ? TraceRecorder::Now() : 0;
  auto called = std::make_shared<std::atomic<bool>>(false);
  OpDone done = [self = graph_.shared_from_this(), this, task, &slot, generation, traced, began,
                 called](std::exception_ptr error) {
    if (called->exchange(true)) return;  // once per run
    EndLater(task, slot, generation, traced, began, error);
  };
  if (traced) CurrentTrace() = graph_.tracer().Context(graph_.tracer().lane(node), slot);
  try {
    op.Run(*task->context, done);
  } catch (...) {
    done(std::current_exception());
  }
  if (traced) CurrentTrace() = {};  // done may come later, from elsewhere
}

void AsyncOps::Stop(const std::vector<std::unique_ptr<IterationSlot>>& slots) {
  for (const auto& slot : slots) {
    for (auto& runner : slot->block_runners) {
      if (runner) runner->Shutdown();
    }
  }
  for (auto& actor : op_actors_) {
    if (actor) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }
}

}  // namespace rill
