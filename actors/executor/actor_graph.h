// ActorGraph: an SsaGraph brought to life — streams with their CAF actors,
// one task per op and iteration slot, kernel contexts bound to the places'
// scopes — spawned once per (program, places) and reused for every iteration.
//
// An iteration: Begin() picks a free iteration slot, splits the feeds over the
// places and hands the source ops to their streams. A stream's drainer runs a
// task's kernel, then arrives at each successor's countdown; a successor whose
// count reaches zero goes to its stream (onto the drainer's own stack when it
// is the same stream, so a chain runs inline without a message). Sinks arrive
// at the slot's terminal countdown; the arrival that completes it collects and
// merges the fetches and fulfils the iteration's future.
//
// With several places, a collective node (one per gradient bucket) is a
// barrier: its countdown waits for the gradient from every place; then each
// place reduces one chunk of it (a task on that place's stream, run before
// compute tasks), and the last chunk releases the optimizer ops. Every place
// runs its chunks in the collectives' global order (actor_graph_collective.cc).
//
// Blocking ops (channel_send/recv, while, select: OpSchema::Blocking) run on
// the runtime's fiber pool, never on a stream's thread; go blocks run there as
// fibers of the iteration, which ends only after them. A failure closes the
// iteration's channels, so that whatever is parked on them returns
// (actor_graph_fibers.cc).
//
// Errors: a kernel that throws fails its iteration: the error (naming block,
// op, type and place) is kept, the remaining ops of that iteration are skipped
// but still counted through, and the future holds the error. The graph stays
// usable. Threads: Run/RunAsync from any thread; the graph's own state is
// touched only through the protocols described in stream.h and countdown.h.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/executor/block_runner.h"
#include "actors/executor/stream.h"
#include "actors/executor/task.h"
#include "rill/device_stream.h"
#include "rill/execution_strategy.h"
#include "rill/executor.h"
#include "rill/iteration_stats.h"
#include "rill/kernel_context.h"
#include "rill/nccl_communicators.h"
#include "rill/op_actor.h"
#include "rill/proto/program.pb.h"
#include "rill/run_context.h"
#include "rill/runtime.h"
#include "rill/scope.h"
#include "rill/trace_recorder.h"
#include "runtime/core/place_io.h"
#include "runtime/core/staging.h"
#include "runtime/desc/var_index.h"
#include "runtime/graph/data_parallel.h"
#include "runtime/graph/ssa_graph.h"

namespace rill {

class ActorGraph : public std::enable_shared_from_this<ActorGraph> {
 public:
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
  using DoneFn = std::function<void(std::vector<Tensor>, std::exception_ptr)>;
  void RunAsync(const FeedList& feeds, const std::vector<std::string>& fetches, DoneFn done);
  // The variables the graph reads before writing them: what a run is fed.
  std::vector<std::string> FeedNames() const;

  // Cancels what is in flight, waits for running kernels to end and stops the
  // actors. Safe to call twice; the destructor calls it.
  void Shutdown();

  // Copies the persistable variables of `scope` to the other places' copies
  // (AllReduce keeps one per place); Run does it for copies never filled.
  void BroadcastParameters();

  const SsaGraph& graph() const { return graph_; }
  const DataParallelPlan& plan() const { return plan_; }
  const ExecutionStrategy& strategy() const { return strategy_; }
  int max_iterations_in_flight() const { return static_cast<int>(slots_.size()); }
  IterationStats last_stats() const;
  // The merge applied to a fetched variable.
  FetchMerge MergeFor(const std::string& name) const;

  // -- for the stream and watchdog actors --------------------------------------
  // A stream actor was woken: drain the stream if nobody else does.
  void OnWake(Stream& stream);
  // The watchdog's periodic look at the iterations in flight.
  void WatchdogTick();
  // A custom op actor got its ready message: runs it; its done completes the node.
  void RunActorOp(Task* task, OpActor& op);

  // Whether the last iteration begun is being recorded.
  bool traced() const { return trace_ != nullptr && trace_->on(); }
  // Records a wait of the graph's driver from `begin_ns` to now (tracing only).
  void TraceDriverWait(WaitKind kind, const std::string& what, int64_t begin_ns);

  // Test hook: feed nodes of these variables never run, as if their producer
  // were lost; an empty list delivers every feed again.
  void WithholdFeedsForTesting(const std::vector<std::string>& names);

 private:
  // What the hot path does not need of an op node (that is in its Task).
  struct Node {
    int stream = -1;  // global stream id; -1 for a collective
    uint32_t predecessor_count = 0;
    int feed_index = -1;        // for feed nodes: index into the slot's feed values
    int collective = -1;        // for collectives: index into collectives_
    std::vector<int> releases;  // releasable variables this node is a reader (or producer) of
    std::vector<int> cross_stream_producers;      // streams of predecessors on other streams
    const KernelFn* kernel = nullptr;             // nullptr for feed nodes and collectives
    bool block = false;                           // run by a BlockRunner
    bool fiber = false;                           // a Blocking() op: runs on a fiber
    std::shared_ptr<const OpActorFactory> actor;  // a custom op actor's (op_actor.h)
    const TryKernelFn* try_kernel = nullptr;      // a Blocking() op's inline attempt
  };
  // One gradient merge: its node and what it merges.
  struct Collective {
    int node = -1;
    int order = 0;                     // issue position on every place
    bool reduce = false;               // into the shared copy (else into every place's)
    std::vector<std::string> members;  // gradient variables
  };
  // A variable whose buffer can go once its last reader has run.
  struct Releasable {
    std::string name;
    int place = 0;    // -1: the shared copy
    int readers = 0;  // arrivals that release it (1 for a variable nobody reads)
  };
  // One feed node: which variable on which place.
  struct Feed {
    std::string name;
    int place = 0;
  };
  // A collective's chunk tasks in one slot, and each place's issue position.
  struct PlaceOrder {
    std::mutex mutex;
    int next = 0;                // the collective order this place runs next
    std::vector<Task*> waiting;  // by order: chunk tasks that came before their turn
  };
  struct Slot;
  // The RunContext of one iteration slot: go blocks become fibers counted by
  // the slot; closers (the channels it created) run when the iteration fails.
  class SlotRun : public RunContext {
   public:
    SlotRun(ActorGraph* graph, Slot* slot) : graph_(graph), slot_(slot) {}
    const proto::ProgramDesc& program() const override;
    void Go(std::string what, std::function<void()> body) override;
    void OnFailure(std::function<void()> closer) override;
    void Progress() override;
    // Runs the closers registered so far (and any registered later in this iteration).
    void CloseAll();
    // Forgets the closers: a new iteration begins.
    void Reset();

   private:
    ActorGraph* graph_;
    Slot* slot_;
    std::mutex mutex_;
    std::vector<std::function<void()>> closers_;  // guarded by mutex_
    bool closed_ = false;                         // guarded by mutex_
  };
  // Everything one iteration in flight owns.
  struct Slot {
    int index = 0;
    std::atomic<bool> busy{false};
    std::atomic<uint32_t> generation{0};  // of the iteration using the slot; 0: none yet
    bool dirty = false;                   // an aborted iteration left countdowns behind: reset all
    std::atomic<bool> cancelled{false};
    std::atomic<bool> done{false};
    Scope* base = nullptr;  // shared variables (the scope, or a child per slot)
    std::unique_ptr<Scope> own_base;
    std::vector<Scope*> place_scopes;  // each place's own variables
    std::vector<std::unique_ptr<Scope>> own_place_scopes;
    struct ParameterCopy {
      Variable* copy;
      Variable* source;
      int place;
    };
    std::vector<ParameterCopy> parameter_copies;
    std::unique_ptr<Task[]> tasks;                  // by node id
    std::unique_ptr<Task[]> chunks;                 // by collective * places + place
    std::unique_ptr<Countdown[]> chunk_countdowns;  // by collective: chunks still running
    // By collective: member m's variable on place p at [m * (places + 1) + p],
    // the shared copy at p = places.
    std::vector<std::vector<Variable*>> collective_vars;
    // Device places: by node, the event recorded after its launch; by
    // collective * places + place, the event after that place's merge chunk.
    std::vector<std::unique_ptr<DeviceEvent>> node_events;
    std::vector<std::unique_ptr<DeviceEvent>> chunk_events;
    // By collective and member: the gradient is selected rows this iteration
    // (decided when the collective is issued, before its chunks run).
    std::vector<std::vector<uint8_t>> collective_sparse;
    // By collective and member: the places' contributions are quantized.
    std::vector<std::vector<uint8_t>> collective_compressed;
    // By collective: bytes of the places' contributions, as float32 and as
    // merged (IterationStats). Dense members counted at issue, selected rows
    // by the chunk that merges them; read once the last chunk has finished.
    std::vector<std::pair<int64_t, int64_t>> collective_bytes;
    std::vector<std::unique_ptr<PlaceOrder>> orders;       // by place
    std::vector<std::unique_ptr<KernelContext>> contexts;  // by place * ops + op index
    Countdown terminal;
    std::unique_ptr<std::atomic<int32_t>[]> release_counts;
    std::vector<Variable*> release_vars;
    std::vector<uint8_t> keep;        // by releasable index: fetched this iteration
    std::vector<Tensor> feed_values;  // by feed index
    // Places with device memory: pinned buffers the feeds are copied through
    // (by feed index), and the fetches (by fetch * places + place).
    std::vector<std::unique_ptr<PinnedStaging>> feed_staging;
    std::vector<std::unique_ptr<PinnedStaging>> fetch_staging;
    std::vector<uint8_t> feed_given;
    std::vector<Variable*> feed_vars;
    std::vector<double> place_weights;  // each place's share of the batch
    std::vector<std::string> fetches;
    std::promise<std::vector<Tensor>> promise;
    DoneFn on_done;  // instead of the promise, when set
    // Block ops: each place's scopes (keyed by forward block), and the runners by node.
    std::map<int, std::vector<std::unique_ptr<Scope>>> block_scopes;
    std::vector<std::unique_ptr<BlockRunner>> block_runners;
    std::atomic<int> backward_pending{0};
    std::atomic<int> overlapped{0};
    std::mutex error_mutex;
    std::exception_ptr error;            // guarded by error_mutex
    std::atomic<int64_t> started_ns{0};  // steady clock, when the iteration began
    std::unique_ptr<SlotRun> run;        // what kernels see of the iteration (go blocks)
    // The graph's part (1 until the terminal countdown completes) plus fiber
    // ops and go blocks still running; the iteration finishes at zero.
    std::atomic<int> outstanding{0};
    std::atomic<bool> aborted{false};      // Abort ran for this iteration
    std::atomic<bool> graph_ended{false};  // the graph's part of `outstanding` is gone
    // Tracing: whether this iteration is recorded, its number, each edge's
    // variable (parallel to successor_list_) and when each collective was issued.
    bool traced = false;
    int iteration = 0;
    std::vector<Variable*> trace_edge_vars;
    std::vector<int64_t> collective_issue_ns;
  };

  ActorGraph(Runtime* runtime, const proto::ProgramDesc& program, int block_index,
             const std::vector<Place>& places, Scope* scope, const ExecutionStrategy& strategy,
             const BuildStrategy& build);

  // -- construction (actor_graph.cc) -------------------------------------------
  void Build();
  void BindSlot(Slot& slot, bool private_scope);
  void BuildNodes();
  void BuildReleases();
  void BuildTasks(Slot& slot);
  void SpawnActors();
  bool CarriesStateAcrossIterations() const;
  int places() const { return plan_.places; }
  int op_count() const { return plan_.program.blocks(block_index_).ops_size(); }
  Scope* ScopeOf(const Slot& slot, int place) const;
  // Where place p's copies of parameters live: the CPU place for places with
  // host memory (their kernels allocate there, and reuse only such buffers),
  // else p's device.
  Place CopyPlace(int p) const {
    const Place& place = places_[static_cast<size_t>(p)];
    return place.host_memory() ? Place::Cpu() : place;
  }

  // -- an iteration (actor_graph_run.cc) ---------------------------------------
  // Picks a free slot (waiting while all are busy), checks and binds the feeds,
  // resets what needs resetting. Returns the slot and the iteration's future.
  Slot& Begin(const FeedList& feeds, const std::vector<std::string>& fetches,
              std::future<std::vector<Tensor>>* future);
  void CheckFeeds(const FeedList& feeds) const;
  void CheckMissingFeeds(const Slot& slot, const FeedList& feeds) const;
  void BindFeeds(Slot& slot, const FeedList& feeds);
  void ResetSlot(Slot& slot);
  void Kick(Slot& slot);
  // The calling thread runs ops (its home stream first) until `slot` is done.
  void Help(Slot& slot, std::future<std::vector<Tensor>>& future);
  // Runs tasks of `stream` while holding its claim; returns once it is empty
  // and stayed empty for the linger time (or no iteration is in flight).
  void Drain(Stream& stream);
  void RunTask(Task* task, Stream& stream);
  // After a node's work: release, rearm, arrive at the successors and the terminal.
  void Complete(Task* task, Slot& slot, uint32_t generation, Stream* stream);
  void Dispatch(Task* task, Stream* from);
  void WaitForProducerStreams(int node, Stream& self);
  void Release(int node, Slot& slot);
  void FailIteration(Slot& slot, int node, const Error& error);
  // Runs `work` (a kernel); if it throws, fails the iteration at `node`.
  // Returns whether it ran to the end.
  template <class Work>
  bool RunOrFail(Slot& slot, int node, Work&& work) {
    try {
      work();
      return true;
    } catch (const Error& e) {
      FailIteration(slot, node, e);
    } catch (const std::exception& e) {
      FailIteration(slot, node, Error(ErrorCode::kInternal, e.what()));
    } catch (...) {
      FailIteration(slot, node, Error(ErrorCode::kInternal, "unknown exception"));
    }
    return false;
  }
  void Finish(Slot& slot);
  void Abort(Slot& slot, const std::string& why);

  // -- collectives (actor_graph_collective.cc) ---------------------------------
  // A collective's inputs are ready on every place: hand each place its chunk.
  void IssueCollective(Task* task, Slot& slot, uint32_t generation);
  // Submits a chunk task when its collective's turn has come on its place.
  void SubmitChunkInOrder(Slot& slot, int place, int order, Task* chunk);
  void RunChunk(Task* chunk, Stream& stream);

  // -- device places (actor_graph_device.cc) -------------------------------------
  // A device place's executor streams each own a device stream (compute), and
  // the place a comm stream for its merge chunks. Ops there are launched, not
  // run: the executor's stream waits on the device for the op's producers on
  // other device streams (DependencyWait::kEvent: their events; kStreamSync:
  // the host waits for their streams), launches the kernel, records the op's
  // event and passes readiness on at once. The iteration's end waits for the
  // devices.
  void BuildDeviceStreams();
  void BuildCudaPlaces();
  bool OnDevice(const Task& task) const {
    return task.stream >= 0 && !device_streams_.empty() && device_streams_[task.stream] != nullptr;
  }
  void LaunchTask(Task* task, Stream& stream);
  // Makes `device`'s next work wait for the producers of `node` on other streams.
  void WaitForDeviceInputs(int node, DeviceStream& device, Slot& slot);
  // A merge chunk of a device place: launched on the place's comm stream
  // after every place's gradient; returns false for a CPU place.
  bool LaunchChunk(Task* chunk, const Collective& c, Slot& slot);
  // Before a merge reads its gradients' shapes on the host: the asynchronous
  // CPU device's kernels size their outputs when they run.
  void WaitForGradients(const Collective& c, Slot& slot);
  // The host waits for every device stream (the iteration's end); a stream's
  // error fails the slot.
  void SynchronizeDevices(Slot& slot);
  // Places with device memory (CUDA): a feed is copied there through pinned
  // memory on the place's copy stream; its consumers wait for that copy.
  void StageFeed(int node, int feed, Slot& slot);
  // A fetched value in host memory (device values copied on the copy stream).
  Tensor FetchedToHost(const Tensor& value, int place, size_t fetch, Slot& slot);
  // Persistable variables (parameters, optimizer state) in host memory are
  // moved to the places with device memory that use them, once.
  void MoveParametersToDevices(Slot& slot);
  // A merge of CUDA places: one grouped NCCL allreduce on the places' comm
  // streams after each place's gradients, then the node completes at once
  // (the optimizer ops' streams wait for the comm streams' events).
  void MergeOnNccl(Task* task, const Collective& c, Slot& slot, uint32_t generation);
  // The reduce arithmetic of one chunk (actor_graph_collective.cc).
  void ReduceChunk(Task* chunk, Slot& slot);

  // -- block ops (parallel_do) ---------------------------------------------------
  void BuildBlockRunners(Slot& slot);
  void StartBlock(Task* task, Slot& slot, uint32_t generation);
  // Sends a custom op actor its ready message.
  void StartActorOp(Task* task, Slot& slot);
  // Ops that end later than they start (block ops, custom op actors): counted
  // in blocks_running_ from Begin (false: the iteration is cancelled, the node
  // completed at once) to End, which fails the iteration on `error`, records
  // the op's span from `began` when traced, and completes the node.
  bool BeginAsyncOp(Task* task, Slot& slot, uint32_t generation);
  void EndAsyncOp(Task* task, Slot& slot, uint32_t generation, bool traced, int64_t began,
                  std::exception_ptr error);
  void MergeSparse(const Collective& c, size_t member, Slot& slot);
  // Member m's dense gradient on place 0, after checking that every place
  // holds one of the same shape and type (the error names the member and place).
  const Tensor& CheckGradientsAlike(const Collective& c, size_t m, const Slot& slot) const;
  // Whether member m of a collective is quantized this iteration (decided at issue).
  bool Compresses(const Variable& gradient) const;
  // Place p's residual of member m (sized `elements`, zeros when new or
  // resized; -1: as it is).
  std::vector<float>& Residual(const Collective& c, size_t member, int place, int64_t elements);
  void MergeCompressed(const Collective& c, size_t member, Variable* const* places_vars, int64_t lo,
                       int64_t hi);

  // -- fibers (actor_graph_fibers.cc) ------------------------------------------
  void StartFiber(Task* task, Slot& slot, uint32_t generation);
  // Runs `body` as a fiber of the slot's iteration; an error it throws fails the iteration.
  void StartGo(Slot& slot, std::string what, std::function<void()> body);
  // One part of the iteration is over; the last one finishes it.
  void EndOutstanding(Slot& slot);
  // The graph's own part is over (terminal countdown completed, or aborted); once.
  void EndGraphPart(Slot& slot);
  // Fails the iteration with an error that no node of the graph raised.
  void FailSlot(Slot& slot, std::exception_ptr error);

  // -- tracing (actor_graph_trace.cc) ------------------------------------------
  // Registers the graph and its lanes with strategy_.trace (if any).
  void RegisterTrace();
  // Records a span (kernel, collective) of `node` on `lane` ending now, and
  // makes it the thread's trace context (what the lane sends next leaves from it).
  // A collective's span carries its bytes as merged and as float32.
  void TraceSpan(TraceEventKind kind, int lane, int node, int stream_index, int64_t begin_ns,
                 const Slot& slot, int64_t bytes = 0, int64_t raw_bytes = 0);
  // The readiness messages of a completed node to its successors.
  void TraceSends(const Task& task, const Slot& slot);
  // A collective was issued: one chunk message to each place.
  void TraceChunkMessages(const Collective& c, Slot& slot);
  void TraceIteration(const Slot& slot);
  void TraceWakeReceived(Stream& stream, uint32_t id, int64_t begin_ns);
  int trace_lane(int node) const { return trace_lanes_[static_cast<size_t>(node)]; }

  // -- watchdog (actor_graph_watchdog.cc) --------------------------------------
  std::string DescribeNode(int node) const;
  std::string StallReport(Slot& slot) const;
  bool AnyKernelRunning() const;

  Runtime* runtime_;
  proto::ProgramDesc program_;  // as given (validated)
  int block_index_;
  std::vector<Place> places_;
  Scope* scope_;
  ExecutionStrategy strategy_;
  BuildStrategy build_;
  DataParallelPlan plan_;  // the planned program: kernel contexts point into it
  // Error feedback of compressed merges: by collective order, [member * places
  // + place]. Chunks of one merge write disjoint ranges; merges of one
  // collective never overlap (training runs one iteration at a time).
  std::vector<std::vector<std::vector<float>>> merge_residuals_;
  // Device places (actor_graph_device.cc): by global stream id (null for CPU
  // places' streams), and each place's comm stream (null for CPU places).
  std::vector<std::unique_ptr<DeviceStream>> device_streams_;
  std::vector<std::unique_ptr<DeviceStream>> comm_streams_;
  // Places with device memory (CUDA): each one's copy stream (feeds and
  // fetches; null elsewhere), and the NCCL communicators of their merges.
  std::vector<std::unique_ptr<DeviceStream>> copy_streams_;
  std::unique_ptr<NcclCommunicators> nccl_;
  std::mutex device_parameters_mutex_;  // MoveParametersToDevices
  SsaGraph graph_;
  std::vector<Node> nodes_;
  std::vector<int32_t> successor_list_;   // all nodes' successors; tasks point into it
  std::vector<int32_t> successor_begin_;  // by node, into successor_list_
  std::vector<int> sources_;
  uint32_t sink_count_ = 0;
  int backward_nodes_ = 0;
  std::vector<Feed> feeds_;                                       // by feed index
  std::unordered_map<std::string, std::vector<int>> feed_index_;  // name -> feed index by place
  std::unique_ptr<VarIndex> declared_;   // the planned block's visible declarations
  std::vector<Collective> collectives_;  // by order
  std::vector<Releasable> releasables_;
  std::unordered_map<std::string, std::vector<int>> releasable_index_;  // name -> indices
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::counting_semaphore<1 << 20> free_slots_{0};
  std::mutex slot_mutex_;  // picking a free slot
  std::atomic<int> in_flight_{0};
  std::atomic<int> blocks_running_{0};       // block and custom-actor ops started and not yet done
  std::vector<caf::actor> op_actors_;        // by node: the custom op actors
  std::atomic<int> fibers_running_{0};       // fiber ops and go blocks started and not yet done
  std::atomic<uint64_t> fiber_progress_{0};  // ops finished on fibers (for the watchdog)
  std::atomic<bool> shut_down_{false};
  std::vector<std::string> withheld_feeds_;
  mutable std::mutex stats_mutex_;
  IterationStats last_stats_;  // guarded by stats_mutex_
  caf::actor watchdog_;
  uint64_t watchdog_progress_ = 0;  // watchdog actor only
  std::chrono::steady_clock::time_point watchdog_last_change_;
  bool watchdog_reported_ = false;
  // Tracing (null trace_: off).
  TraceRecorder* trace_ = nullptr;
  int trace_graph_ = 0;
  int trace_driver_lane_ = 0;
  std::vector<int> trace_lanes_;            // by node
  std::vector<int> trace_chunk_lanes_;      // by collective order * places + place
  std::vector<int32_t> trace_edge_detail_;  // parallel to successor_list_: the variable
  std::vector<uint8_t> trace_edge_control_;
  std::atomic<int> next_iteration_{0};
};

}  // namespace rill
