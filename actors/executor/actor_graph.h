// ActorGraph: an SsaGraph brought to life, spawned once per (program, places)
// and reused for every iteration. It is assembled from parts, each in a file
// of its own:
//   BuiltGraph      what never changes after spawning: nodes, successor
//                   lists, feeds, merges, early-freed variables (built_graph.h)
//   IterationSlot   one iteration in flight: tasks, scopes, feeds, fetches,
//                   errors, countdown re-arming (iteration_slot.h)
//   Stream, StreamDrainer  the queues tasks wait in and the threads that
//                   drain them, with one linger routine (stream.h, stream_drainer.h)
//   MergeScheduler  how a merge runs once its barrier opens: chunks on each
//                   place's stream, or NCCL (merge_scheduler.h)
//   GradientMerger  the arithmetic of gradient merges; MergeOrder, their
//                   global issue order per place (gradient_merge.h, merge_order.h)
//   DeviceLauncher  device places' streams, events, copies, NCCL (device_launcher.h)
//   AsyncOps        fibers, go blocks, block ops, custom op actors (async_ops.h)
//   Watchdog        stalled iterations (watchdog.h)
//   GraphTracer     what the trace records (graph_tracer.h)
// The graph itself begins, finishes and fails iterations, and runs tasks:
// Invoke is the one place that says what running each kind of task means.
//
// An iteration: Begin picks a free slot, binds the feeds and hands the source
// tasks to their streams. Running a task runs its op, then arrives at each
// successor's countdown; a successor whose count reaches zero goes to its
// stream (onto the drainer's own stack when it is the same stream, so a chain
// runs inline without a message) or, for kinds that do not run on a stream,
// starts at once. Sinks arrive at the slot's terminal countdown; the arrival
// that completes it ends the graph's part of the iteration, which finishes
// (fetches collected and merged, the future fulfilled) when its fibers are
// done too.
//
// Errors: a task that throws fails its iteration: the error (naming block,
// op, type and place) is kept, the remaining ops of that iteration are skipped
// but still counted through, and the future holds the error. The graph stays
// usable. Threads: Run/RunAsync from any thread; the graph's own state is
// touched only through the protocols of stream.h, countdown.h and the parts.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <vector>

#include "actors/executor/async_ops.h"
#include "actors/executor/build_times.h"
#include "actors/executor/built_graph.h"
#include "actors/executor/device_launcher.h"
#include "actors/executor/feed_rule.h"
#include "actors/executor/gradient_merge.h"
#include "actors/executor/graph_tracer.h"
#include "actors/executor/idle_helpers.h"
#include "actors/executor/iteration_slot.h"
#include "actors/executor/merge_scheduler.h"
#include "actors/executor/stream.h"
#include "actors/executor/stream_drainer.h"
#include "actors/executor/task.h"
#include "actors/executor/watchdog.h"
#include "rill/execution_strategy.h"
#include "rill/feeds.h"
#include "rill/iteration_stats.h"
#include "rill/proto/program.pb.h"
#include "rill/runtime.h"
#include "rill/scope.h"
#include "runtime/graph/data_parallel.h"
#include "runtime/graph/ssa_graph.h"

namespace rill {

class OpActor;

class ActorGraph : public std::enable_shared_from_this<ActorGraph> {
 public:
  using DoneFn = IterationSlot::DoneFn;

  // Validates the program, plans it over `places` (data_parallel.h), builds
  // the SSA graph of `block_index` and spawns its actors in `runtime`. `scope`
  // holds the persistable variables; it and the runtime must outlive the
  // graph's use (Shutdown).
  static std::shared_ptr<ActorGraph> Spawn(Runtime* runtime, const proto::ProgramDesc& program,
                                           int block_index, const std::vector<Place>& places,
                                           Scope* scope, const ExecutionStrategy& strategy,
                                           const BuildStrategy& build);
  ~ActorGraph();
  ActorGraph(const ActorGraph&) = delete;
  ActorGraph& operator=(const ActorGraph&) = delete;

  // Runs one iteration; the calling thread helps run ops until it ends.
  // Returns the fetched tensors (merged over places) or throws the iteration's error.
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<std::string>& fetches);
  // Starts one iteration and returns at once; blocks only while
  // max_iterations_in_flight iterations are running.
  std::future<std::vector<Tensor>> RunAsync(const FeedList& feeds,
                                            const std::vector<std::string>& fetches);
  // Like RunAsync, calling `done` (on some thread) instead of fulfilling a future.
  void RunAsync(const FeedList& feeds, const std::vector<std::string>& fetches, DoneFn done);
  // The variables the graph reads before writing them: what a run is fed.
  std::vector<std::string> FeedNames() const { return built_->FeedNames(); }

  // Cancels what is in flight, waits for running kernels to end and stops the
  // actors. Safe to call twice; the destructor calls it.
  void Shutdown();

  // Copies the persistable variables of `scope` to the other places' copies
  // (AllReduce keeps one per place); Run does it for copies never filled.
  void BroadcastParameters();

  const SsaGraph& graph() const { return built_->ssa; }
  const DataParallelPlan& plan() const { return plan_; }
  const ExecutionStrategy& strategy() const { return strategy_; }
  int max_iterations_in_flight() const { return static_cast<int>(slots_.size()); }
  IterationStats last_stats() const;
  // The merge applied to a fetched variable.
  FetchMerge MergeFor(const std::string& name) const;

  // Whether the last iteration begun is being recorded.
  bool traced() const { return tracer_->on(); }
  // Records a wait of the graph's driver from `begin_ns` to now (tracing only).
  void TraceDriverWait(WaitKind kind, const std::string& what, int64_t begin_ns);

  // Test hook: feed nodes of these variables never run, as if their producer
  // were lost; an empty list delivers every feed again.
  void WithholdFeedsForTesting(const std::vector<std::string>& names);

  // -- for the graph's parts and actors ------------------------------------------
  // Runs `task` (from `stream`'s drainer, or null where it became ready).
  void Invoke(Task* task, Stream* stream);
  // After a node's work: frees what it was the last reader of, re-arms it for
  // the slot's next iteration, arrives at its successors and the terminal.
  void Complete(Task* task, IterationSlot& slot, uint32_t generation, Stream* stream);
  // Fails `slot`'s iteration with `error` located at `node`.
  void FailIteration(IterationSlot& slot, int node, std::exception_ptr error);
  // Runs `work` (a kernel); if it throws, fails the iteration at `node`.
  // Returns whether it ran to the end.
  template <class Work>
  bool RunOrFail(IterationSlot& slot, int node, Work&& work) {
    try {
      work();
      return true;
    } catch (...) {
      FailIteration(slot, node, std::current_exception());
    }
    return false;
  }
  // One part of the iteration (the graph's, a fiber's) is over; the last finishes it.
  void EndOutstanding(IterationSlot& slot);
  // A stream actor was woken: drain the stream if nobody else does.
  void OnWake(Stream& stream);
  // The watchdog actor's periodic look at the iterations in flight.
  void WatchdogTick();
  // What a kernel's RunContext asks of its iteration (IterationRun): a go
  // block started as a fiber of it; an op of a sub-block ended.
  void StartGo(IterationSlot& slot, std::string what, std::function<void()> body);
  void CountProgress();
  // A custom op actor got its ready message for `node` of `slot`'s iteration `generation`.
  void RunActorOp(int slot, int node, uint32_t generation, OpActor& op);
  IterationSlot& slot(int index) { return *slots_[static_cast<size_t>(index)]; }
  const GraphTracer& tracer() const { return *tracer_; }
  // How long each step of building the graph took.
  const BuildTimes& build_times() const { return build_times_; }

 private:
  ActorGraph(Runtime* runtime, int block_index, const std::vector<Place>& places, Scope* scope,
             const ExecutionStrategy& strategy, const BuildStrategy& build);

  // -- construction (each step records its time in build_times_) ---------------------
  // Validates and plans `program`, makes the slots, the SSA graph, the parts, the tasks.
  void Build(const proto::ProgramDesc& program);
  // Each slot's scopes and kernel contexts.
  void MakeSlots(int slots);
  // The built graph of `ssa` (and the planned block's declarations), its
  // streams and the parts that work on it.
  void MakeParts(SsaGraph ssa, VarIndex declared);
  void SpawnActors();
  bool CarriesStateAcrossIterations() const;
  // Where place p's copies of parameters live: the CPU place for places with
  // host memory (their kernels allocate there, and reuse only such buffers),
  // else p's device.
  Place CopyPlace(int p) const {
    const Place& place = places_[static_cast<size_t>(p)];
    return place.host_memory() ? Place::Cpu() : place;
  }

  // -- an iteration ------------------------------------------------------------------
  // Picks a free slot (waiting while all are busy), checks and binds the feeds,
  // resets what needs resetting; the iteration's future comes back in `future`.
  IterationSlot& Begin(const FeedList& feeds, const std::vector<std::string>& fetches,
                       std::future<std::vector<Tensor>>* future);
  IterationSlot& AcquireSlot();
  void ReleaseSlot(IterationSlot& slot);
  void Kick(IterationSlot& slot);
  void Dispatch(Task* task, Stream* from);
  void RunKernel(Task* task, Stream& stream, IterationSlot& slot, uint32_t generation);
  void RunFeed(Task* task, Stream& stream, IterationSlot& slot, uint32_t generation);
  // The graph's own part is over (terminal countdown completed, or aborted); once.
  void EndGraphPart(IterationSlot& slot);
  void Finish(IterationSlot& slot);
  std::vector<Tensor> CollectFetches(IterationSlot& slot);
  // Ends an iteration that cannot finish (nothing runs, nothing is queued):
  // fails its future and marks the slot for a full reset before reuse.
  void Abort(IterationSlot& slot, ErrorCode code, const std::string& why);
  void CancelForShutdown();

  Runtime* runtime_;
  const int block_index_;
  const std::vector<Place> places_;
  Scope* scope_;
  ExecutionStrategy strategy_;
  const BuildStrategy build_;
  DataParallelPlan plan_;  // the planned program: kernel contexts point into it
  std::unique_ptr<const BuiltGraph> built_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<IterationSlot>> slots_;
  std::unique_ptr<FeedRule> feed_rule_;
  std::unique_ptr<GraphTracer> tracer_;
  std::unique_ptr<DeviceLauncher> devices_;
  std::unique_ptr<GradientMerger> merger_;
  std::unique_ptr<MergeScheduler> merges_;
  std::unique_ptr<AsyncOps> async_;
  // Lent to CPU kernels' ParallelFor when the graph has more than one stream.
  std::unique_ptr<IdleHelpers> helpers_;
  std::unique_ptr<StreamDrainer> drainer_;
  std::unique_ptr<Watchdog> watchdog_;
  caf::actor watchdog_actor_;
  std::counting_semaphore<1 << 20> free_slots_{0};
  std::mutex slot_mutex_;  // picking a free slot
  std::atomic<int> in_flight_{0};
  std::atomic<bool> shut_down_{false};
  std::vector<std::string> withheld_feeds_;
  mutable std::mutex stats_mutex_;
  IterationStats last_stats_;  // guarded by stats_mutex_
  std::atomic<int> next_iteration_{0};
  BuildTimes build_times_;
};

}  // namespace rill
