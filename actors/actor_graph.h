// ActorGraph: an SsaGraph brought to life — streams with their CAF actors,
// one task per op and iteration slot, kernel contexts bound to the scope —
// spawned once per (program, places) and reused for every iteration.
//
// An iteration: Start() binds the feeds, picks a free iteration slot and hands
// the source ops to their streams. A stream's drainer runs a task's kernel,
// then arrives at each successor's countdown; a successor whose count reaches
// zero goes to its stream (onto the drainer's own stack when it is the same
// stream, so a chain runs inline without a message). Sinks arrive at the
// slot's terminal countdown; the arrival that completes it collects the
// fetches and fulfils the iteration's future.
//
// Errors: a kernel that throws fails its iteration: the error (naming block,
// op, type and place) is kept, the remaining ops of that iteration are skipped
// but still counted through, and the future holds the error. The graph stays
// usable. Threads: Start/Run/Help from any thread; the graph's own state is
// touched only through the protocols described in stream.h and countdown.h.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/execution_strategy.h"
#include "actors/runtime.h"
#include "actors/stream.h"
#include "actors/task.h"
#include "proto/program.pb.h"
#include "runtime/executor.h"
#include "runtime/graph/ssa_graph.h"
#include "runtime/kernel_context.h"
#include "runtime/scope.h"
#include "runtime/var_index.h"

namespace rill {

class ActorGraph : public std::enable_shared_from_this<ActorGraph> {
 public:
  // Validates the program, builds the SSA graph of `block_index` over `places`
  // and spawns its actors in `runtime`. `scope` holds the persistable
  // variables; it and the runtime must outlive the graph's use (Shutdown).
  static std::shared_ptr<ActorGraph> Spawn(Runtime* runtime,
                                           const proto::ProgramDesc& program, int block_index,
                                           const std::vector<Place>& places, Scope* scope,
                                           const ExecutionStrategy& strategy);
  ~ActorGraph();
  ActorGraph(const ActorGraph&) = delete;
  ActorGraph& operator=(const ActorGraph&) = delete;

  // Runs one iteration; the calling thread helps run ops until it ends.
  // Returns the fetched tensors (sharing memory with the scope) or throws the
  // iteration's error.
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<std::string>& fetches);
  // Starts one iteration and returns at once; blocks only while
  // max_iterations_in_flight iterations are running.
  std::future<std::vector<Tensor>> RunAsync(const FeedList& feeds,
                                            const std::vector<std::string>& fetches);

  // Cancels what is in flight, waits for running kernels to end and stops the
  // actors. Safe to call twice; the destructor calls it.
  void Shutdown();

  const SsaGraph& graph() const { return graph_; }
  const ExecutionStrategy& strategy() const { return strategy_; }
  int max_iterations_in_flight() const { return static_cast<int>(slots_.size()); }

  // -- for the stream and watchdog actors --------------------------------------
  // A stream actor was woken: drain the stream if nobody else does.
  void OnWake(Stream& stream);
  // The watchdog's periodic look at the iterations in flight.
  void WatchdogTick();

  // Test hook: feed nodes of these variables never run, as if their producer
  // were lost; an empty list delivers every feed again.
  void WithholdFeedsForTesting(const std::vector<std::string>& names);

 private:
  // What the hot path does not need of an op node (that is in its Task).
  struct Node {
    int stream = 0;                     // global stream id
    uint32_t predecessor_count = 0;
    int feed_index = -1;                // for feed nodes: index into the slot's feed values
    std::vector<int> releases;          // releasable variables this node is a reader (or producer) of
    std::vector<int> cross_stream_producers;  // streams of predecessors on other streams
    const KernelFn* kernel = nullptr;   // nullptr for feed nodes
  };
  // A variable whose buffer can go once its last reader has run.
  struct Releasable {
    std::string name;
    int readers = 0;  // arrivals that release it (1 for a variable nobody reads)
  };
  // Everything one iteration in flight owns.
  struct Slot {
    int index = 0;
    std::atomic<bool> busy{false};
    std::atomic<uint32_t> generation{0};  // of the iteration using the slot; 0: none yet
    bool dirty = false;           // an aborted iteration left countdowns behind: reset all
    std::atomic<bool> cancelled{false};
    std::atomic<bool> done{false};
    Scope* scope = nullptr;
    std::unique_ptr<Scope> own_scope;  // child scope when several iterations run at once
    std::unique_ptr<Task[]> tasks;
    std::vector<std::unique_ptr<KernelContext>> contexts;  // by op index in the block
    Countdown terminal;
    std::unique_ptr<std::atomic<int32_t>[]> release_counts;
    std::vector<Variable*> release_vars;
    std::vector<uint8_t> keep;    // by releasable index: fetched this iteration
    std::vector<Tensor> feed_values;  // by feed index
    std::vector<uint8_t> feed_given;
    std::vector<Variable*> feed_vars;
    std::vector<std::string> fetches;
    std::promise<std::vector<Tensor>> promise;
    std::mutex error_mutex;
    std::exception_ptr error;     // guarded by error_mutex
    std::atomic<int64_t> started_ns{0};  // steady clock, when the iteration began
  };

  ActorGraph(Runtime* runtime, const proto::ProgramDesc& program, int block_index,
             const std::vector<Place>& places, Scope* scope, const ExecutionStrategy& strategy);
  void Build();
  void BuildNodes();
  void BuildReleases();
  void BindSlot(Slot& slot, bool private_scope);
  void BuildTasks(Slot& slot);
  void SpawnActors();
  bool CarriesStateAcrossIterations() const;

  // Picks a free slot (waiting while all are busy), checks and binds the feeds,
  // resets what needs resetting. Returns the slot and the iteration's future.
  Slot& Begin(const FeedList& feeds, const std::vector<std::string>& fetches,
              std::future<std::vector<Tensor>>* future);
  void CheckFeeds(const FeedList& feeds) const;
  void ResetSlot(Slot& slot);
  void Kick(Slot& slot);
  // The calling thread runs ops (its home stream first) until `slot` is done.
  void Help(Slot& slot, std::future<std::vector<Tensor>>& future);

  // Runs tasks of `stream` while holding its claim; returns once it is empty
  // and stayed empty for the linger time (or no iteration is in flight).
  void Drain(Stream& stream);
  void RunTask(Task* task, Stream& stream);
  void Dispatch(Task* task, Stream& from);
  void Release(int node, Slot& slot);
  void WaitForProducerStreams(int node, Stream& self);
  void FailIteration(Slot& slot, int node, const Error& error);
  void Finish(Slot& slot);
  void Abort(Slot& slot, const std::string& why);
  std::string DescribeNode(int node) const;
  std::string StallReport(Slot& slot) const;
  bool AnyKernelRunning() const;

  Runtime* runtime_;
  proto::ProgramDesc program_;  // a private copy: kernel contexts point into it
  int block_index_;
  std::vector<Place> places_;
  Scope* scope_;
  ExecutionStrategy strategy_;
  SsaGraph graph_;
  std::vector<Node> nodes_;
  std::vector<int32_t> successor_list_;  // all nodes' successors; tasks point into it
  std::vector<int32_t> successor_begin_;  // by node, into successor_list_
  std::vector<int> sources_;
  uint32_t sink_count_ = 0;
  std::vector<std::string> feed_names_;  // by feed index
  std::unique_ptr<VarIndex> declared_;   // the block's visible declarations
  std::unordered_map<std::string, int> feed_index_;        // name -> feed index
  std::unordered_map<std::string, int> releasable_index_;  // name -> releasable index
  std::vector<Releasable> releasables_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::counting_semaphore<1 << 20> free_slots_{0};
  std::mutex slot_mutex_;  // picking a free slot
  std::atomic<int> in_flight_{0};
  std::atomic<bool> shut_down_{false};
  std::vector<std::string> withheld_feeds_;
  caf::actor watchdog_;
  uint64_t watchdog_progress_ = 0;  // watchdog actor only
  std::chrono::steady_clock::time_point watchdog_last_change_;
  bool watchdog_reported_ = false;
};

}  // namespace rill
