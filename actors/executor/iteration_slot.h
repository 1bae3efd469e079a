// IterationSlot: everything one iteration in flight owns — its scopes and
// kernel contexts, one Task per node (and per merge chunk), the merges'
// state, the feeds and fetches, the error, and the counts that tell when it
// is over. A graph has one slot for training programs (an iteration carries
// state into the next) and up to max_iterations_in_flight for programs that
// carry none, each with its own child scope. Slots are built once, with the
// graph, and reset for every iteration.
//
// Generations: every iteration of a slot has a new generation number, and a
// task's countdown counts only arrivals of its own generation, so a straggler
// of an aborted iteration never counts for the next one. A task is re-armed
// for the slot's next iteration as soon as its own predecessors have all
// arrived (Rearm): from then until the next iteration begins nobody else
// touches its countdown. An aborted iteration leaves countdowns half counted;
// it marks the slot dirty, and the next Reset re-arms every task.
//
// Threads: the iteration's fields are written by whoever runs its tasks,
// ordered by the countdowns (acquire/release); `busy`, `generation`,
// `cancelled`, `done`, `outstanding` are atomics; `error` is guarded by
// `error_mutex`. Bind/BuildTasks run before the graph is shared.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/executor/built_graph.h"
#include "actors/executor/gradient_merge.h"
#include "actors/executor/merge_order.h"
#include "actors/executor/task.h"
#include "rill/device_stream.h"
#include "rill/feeds.h"
#include "rill/kernel_context.h"
#include "rill/run_context.h"
#include "rill/scope.h"
#include "runtime/core/staging.h"

namespace rill {

class ActorGraph;
class BlockRunner;

// What the kernels of one iteration see of it (RunContext): go blocks become
// fibers the iteration waits for; closers (the channels it created) run when
// the iteration fails.
class IterationRun : public RunContext {
 public:
  IterationRun(const proto::ProgramDesc& program, ActorGraph* graph, struct IterationSlot* slot)
      : program_(program), graph_(graph), slot_(slot) {}
  const proto::ProgramDesc& program() const override { return program_; }
  void Go(std::string what, std::function<void()> body) override;
  void OnFailure(std::function<void()> closer) override;
  void Progress() override;
  // Runs the closers registered so far (and any registered later in this iteration).
  void CloseAll();
  // Forgets the closers: a new iteration begins.
  void Reset();

 private:
  const proto::ProgramDesc& program_;
  ActorGraph* graph_;
  IterationSlot* slot_;
  std::mutex mutex_;
  std::vector<std::function<void()>> closers_;  // guarded by mutex_
  bool closed_ = false;                         // guarded by mutex_
};

struct IterationSlot {
  using DoneFn = std::function<void(std::vector<Tensor>, std::exception_ptr)>;

  explicit IterationSlot(int index);
  ~IterationSlot();
  IterationSlot(const IterationSlot&) = delete;
  IterationSlot& operator=(const IterationSlot&) = delete;

  // -- building (before the graph is shared) ---------------------------------
  // Scopes: `base` holds what all places share (`scope`, or a child of it when
  // `private_scope`). With one place, or for place 0 under kAllReduce, a place
  // works in `base` itself; other places get a child scope with their own copy
  // of every variable they do not share (under kAllReduce that includes the
  // parameters, copied from `base`).
  void MakeScopes(const DataParallelPlan& plan, Scope* scope, bool private_scope,
                  ReduceStrategy reduce, ActorGraph* graph);
  // One kernel context per op and place that runs it (after MakeScopes).
  void MakeContexts(const DataParallelPlan& plan, const std::vector<Place>& places);
  // One task per node, chunk tasks and state per merge, release counts, feed slots.
  void BuildTasks(const BuiltGraph& graph);
  Scope* ScopeOf(int place) const { return place < 0 ? base : place_scopes[place]; }

  // -- an iteration ------------------------------------------------------------
  // Begins a new generation: re-arms what an abort left (dirty), the terminal
  // countdown, the merges' order, the counters and flags.
  void Reset(const BuiltGraph& graph);
  // Re-arms `task` for the slot's next iteration (see the file comment).
  static void Rearm(Task* task, uint32_t generation) {
    task->countdown.Reset(NextGeneration(generation), task->predecessor_count);
  }
  static uint32_t NextGeneration(uint32_t g) { return g + 1 == 0 ? 1 : g + 1; }
  // Gives feed nodes their values: batch feeds split over the places (rows
  // of the first place first), the others whole to every place, and each
  // place its loss scale n_p / B. Feeds no feed node reads are the graph's
  // to bind (ActorGraph::BindOtherFeeds).
  void BindFeeds(const BuiltGraph& graph, const FeedList& feeds);
  // Keeps the fetched variables' buffers past their last reader this iteration.
  void KeepFetched(const BuiltGraph& graph, const std::vector<std::string>& names);
  // `node` ran: frees the variables whose last reader it was (unless kept).
  void Release(const BuiltGraph& graph, int node);
  // Fails the iteration with `error` (the first one wins), cancels what has
  // not run and closes its channels so that parked ops return.
  void Fail(std::exception_ptr error);
  std::exception_ptr error_value();
  // After the iteration: drops the feeds and fetches it held.
  void Clear();

  const int index;
  std::atomic<bool> busy{false};
  std::atomic<uint32_t> generation{0};  // of the iteration using the slot; 0: none yet
  bool dirty = false;                   // an aborted iteration left countdowns behind: reset all
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};

  // Scopes and kernel contexts.
  Scope* base = nullptr;  // shared variables (the graph's scope, or a child per slot)
  std::unique_ptr<Scope> own_base;
  std::vector<Scope*> place_scopes;  // each place's own variables
  std::vector<std::unique_ptr<Scope>> own_place_scopes;
  struct ParameterCopy {
    Variable* copy;
    Variable* source;
    int place;
  };
  std::vector<ParameterCopy> parameter_copies;
  std::vector<KernelContext> context_storage;  // reserved once: never reallocated
  std::vector<KernelContext*> contexts;        // by place * ops + op index; null: not there
  std::unique_ptr<IterationRun> run;           // what kernels see of the iteration (go blocks)

  // Tasks.
  std::unique_ptr<Task[]> tasks;                    // by node id
  std::unique_ptr<Task[]> chunks;                   // by merge order * places + place
  std::vector<MergeState> merges;                   // by merge order
  std::vector<std::unique_ptr<MergeOrder>> orders;  // by place
  Countdown terminal;                               // sinks still to finish
  std::unique_ptr<std::atomic<int32_t>[]> release_counts;
  std::vector<Variable*> release_vars;
  std::vector<uint8_t> keep;  // by releasable index: fetched this iteration
  // Device places: by node, the event recorded after its launch; by merge
  // order * places + place, the event after that place's merge chunk.
  std::vector<std::unique_ptr<DeviceEvent>> node_events;
  std::vector<std::unique_ptr<DeviceEvent>> chunk_events;
  // Block ops: each place's scopes (keyed by forward block), and the runners by node.
  std::map<int, std::vector<std::unique_ptr<Scope>>> block_scopes;
  std::vector<std::unique_ptr<BlockRunner>> block_runners;

  // Feeds and fetches.
  std::vector<Tensor> feed_values;  // by feed index
  std::vector<uint8_t> feed_given;
  std::vector<Variable*> feed_vars;
  std::vector<double> place_weights;  // each place's share of the batch
  std::vector<int64_t> feed_rows;     // by place: its rows of the batch (empty: feeds not split)
  // Places with device memory: pinned buffers the feeds are copied through
  // (by feed index), and the fetches (by fetch * places + place).
  std::vector<std::unique_ptr<PinnedStaging>> feed_staging;
  std::vector<std::unique_ptr<PinnedStaging>> fetch_staging;
  std::vector<std::string> fetches;
  std::promise<std::vector<Tensor>> promise;
  DoneFn on_done;  // instead of the promise, when set

  // How it ends.
  std::atomic<int> backward_pending{0};  // backward ops not yet run (merge overlap)
  std::atomic<int> overlapped{0};        // merges issued while backward_pending > 0
  std::mutex error_mutex;
  std::exception_ptr error;            // guarded by error_mutex
  std::atomic<int64_t> started_ns{0};  // steady clock, when the iteration began
  // The graph's part (1 until the terminal countdown completes) plus fiber
  // ops and go blocks still running; the iteration finishes at zero.
  std::atomic<int> outstanding{0};
  std::atomic<bool> aborted{false};      // Abort ran for this iteration
  std::atomic<bool> graph_ended{false};  // the graph's part of `outstanding` is gone

  // Tracing: whether this iteration is recorded, its number, each edge's
  // variable (parallel to BuiltGraph::successor_list; GraphTracer fills it).
  bool traced = false;
  int iteration = 0;
  std::vector<Variable*> trace_edge_vars;
};

}  // namespace rill
