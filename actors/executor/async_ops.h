// AsyncOps: the ops of an actor graph that do not run inline on a stream's
// thread, and end later or elsewhere:
//   - Blocking() ops (channel_send/recv, while, select) run their kernels on
//     the runtime's fiber pool, where waiting on a channel parks a fiber
//     instead of a stream's thread; an op with an inline attempt (a read
//     whose batch is already there) first tries it where it became ready;
//   - go blocks run there too, as fibers of the iteration, which ends only
//     after them (IterationSlot::outstanding);
//   - block ops (parallel_do) run their places' nested graphs (BlockRunner);
//   - custom op actors (op_actor.h) get a message and end when they say done.
// Each completes its node like any task. Every failure closes the
// iteration's channels (IterationSlot::Fail), so nothing stays parked.
//
// Threads: Start* from whichever thread made the op ready; the counters are
// atomics read by the watchdog.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/executor/built_graph.h"
#include "actors/executor/iteration_slot.h"
#include "rill/runtime.h"
#include "rill/trace_recorder.h"

namespace rill {

class ActorGraph;
class OpActor;

class AsyncOps {
 public:
  AsyncOps(ActorGraph& graph, const BuiltGraph& built, Runtime& runtime);

  // The slot's block runners (one per block op; a forward op and its gradient
  // share the places' scopes, keyed by the forward block), traced into
  // `trace` under each op's lane.
  void PrepareSlot(IterationSlot& slot, const std::shared_ptr<TraceRecorder>& trace);
  // Spawns the custom op actors' hosts (held weakly by `owner`'s actors).
  void SpawnActors(std::weak_ptr<ActorGraph> owner);

  void StartFiber(Task* task, IterationSlot& slot, uint32_t generation);
  // Runs `body` as a fiber of the slot's iteration; an error it throws fails the iteration.
  void StartGo(IterationSlot& slot, std::string what, std::function<void()> body);
  void StartBlock(Task* task, IterationSlot& slot, uint32_t generation);
  // Sends the node's custom op actor its ready message.
  void StartActorOp(Task* task, IterationSlot& slot, uint32_t generation);
  // The op actor of `node` got its message for `slot`'s iteration `generation`:
  // runs it; its done completes the node. A message of an iteration already
  // over (aborted) is dropped.
  void RunActorOp(int slot, int node, uint32_t generation, OpActor& op);

  // An op of a sub-block run by a fiber ended (RunContext::Progress).
  void CountProgress() { progress_.fetch_add(1, std::memory_order_relaxed); }
  // Ops finished on fibers so far (for the watchdog).
  uint64_t progress() const { return progress_.load(std::memory_order_relaxed); }
  int fibers_running() const { return fibers_running_.load(std::memory_order_acquire); }
  // Block and actor ops started and not yet done.
  int blocks_running() const { return blocks_running_.load(std::memory_order_acquire); }

  // Stops the block runners' graphs and the op actors (shutdown).
  void Stop(const std::vector<std::unique_ptr<IterationSlot>>& slots);

 private:
  // Ops that end later than they start (block ops, custom op actors): counted
  // in blocks_running_ from Begin (false: the iteration is cancelled, the node
  // completed at once) to End, which fails the iteration on `error`, records
  // the op's span from `began` when traced, and completes the node.
  bool BeginLater(Task* task, IterationSlot& slot, uint32_t generation);
  void EndLater(Task* task, IterationSlot& slot, uint32_t generation, bool traced, int64_t began,
                std::exception_ptr error);

  ActorGraph& graph_;
  const BuiltGraph& built_;
  Runtime& runtime_;
  std::vector<caf::actor> op_actors_;   // by node: the custom op actors' hosts
  std::atomic<int> fibers_running_{0};  // fiber ops and go blocks started and not yet done
  std::atomic<int> blocks_running_{0};
  std::atomic<uint64_t> progress_{0};
};

}  // namespace rill
