#include "actors/executor/actor_graph.h"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <thread>

#include "actors/executor/graph_actors.h"
#include "actors/executor/runtime_internals.h"
#include "rill/log.h"
#include "rill/parallel_for.h"
#include "rill/validate.h"
#include "runtime/core/place_io.h"
#include "runtime/device/blas_threads.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;

// Whether an iteration writes a persistable variable (parameters, optimizer
// state, counters): then the next one depends on it and they cannot overlap.
bool CarriesState(const DataParallelPlan& plan, const VarIndex& declared) {
  for (const auto& op : plan.program().blocks(plan.block_index).ops()) {
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) {
        const proto::VarDesc* desc = declared.Find(name);
        if (desc != nullptr && desc->persistable()) return true;
      }
    }
  }
  return false;
}

}  // namespace

// -- construction ------------------------------------------------------------------

std::shared_ptr<ActorGraph> ActorGraph::Spawn(Runtime* runtime, const proto::ProgramDesc& program,
                                              int block_index, const std::vector<Place>& places,
                                              Scope* scope, const ExecutionStrategy& strategy,
                                              const BuildStrategy& build) {
  std::shared_ptr<ActorGraph> graph(
      new ActorGraph(runtime, block_index, places, scope, strategy, build));
  graph->Build(program);
  BuildStopwatch watch;
  graph->SpawnActors();
  graph->build_times_.actors_ms = watch.Lap();
  return graph;
}

ActorGraph::ActorGraph(Runtime* runtime, int block_index, const std::vector<Place>& places,
                       Scope* scope, const ExecutionStrategy& strategy, const BuildStrategy& build)
    : runtime_(runtime),
      block_index_(block_index),
      places_(places),
      scope_(scope),
      strategy_(strategy),
      build_(build) {
  if (strategy_.num_threads <= 0) strategy_.num_threads = runtime_->threads();
  if (strategy_.max_iterations_in_flight < 1) strategy_.max_iterations_in_flight = 1;
  if (!strategy_.trace) strategy_.trace = TraceRecorder::FromEnvironment();
}

ActorGraph::~ActorGraph() { Shutdown(); }

void ActorGraph::Build(const proto::ProgramDesc& program) {
  RILL_CHECK(scope_ != nullptr, kInvalidArgument, "the actor executor needs a scope");
  RILL_CHECK(!places_.empty(), kInvalidArgument, "the actor executor needs at least one place");
  BuildStopwatch watch;
  Validate(program);
  build_times_.validate_ms = watch.Lap();
  RILL_CHECK(block_index_ >= 0 && block_index_ < program.blocks_size(), kOutOfRange, "block ",
             block_index_, " does not exist (the program has ", program.blocks_size(), ")");
  const int places = static_cast<int>(places_.size());
  plan_ = PlanDataParallel(program, block_index_, places, build_);
  VarIndex declared(plan_.program(), block_index_);
  const int slots = CarriesState(plan_, declared) ? 1 : strategy_.max_iterations_in_flight;
  build_times_.plan_ms = watch.Lap();
  MakeSlots(slots);
  watch.Lap();  // MakeSlots timed its own steps
  GraphOptions options;
  options.places = places_;
  options.streams_per_place = std::max(1, strategy_.num_threads / places);
  options.assignment = strategy_.stream_assignment;
  options.build = build_;
  SsaGraph ssa = BuildSsaGraph(plan_, options, declared);
  build_times_.graph_ms = watch.Lap();
  MakeParts(std::move(ssa), std::move(declared));
  build_times_.nodes_ms = watch.Lap();
  for (auto& slot : slots_) {
    slot->BuildTasks(*built_);
    devices_->PrepareSlot(*slot);
    async_->PrepareSlot(*slot, strategy_.trace);
    tracer_->PrepareSlot(*slot);
  }
  free_slots_.release(slots);
  int blas = strategy_.blas_threads;
  if (blas <= 0) blas = std::max(1, Runtime::HardwareThreads() / strategy_.num_threads);
  SetBlasThreads(blas);
  build_times_.tasks_ms = watch.Lap();
}

void ActorGraph::MakeSlots(int slots) {
  // Kernel contexts first, while the heap is fresh: each slot's contexts then
  // lie in one contiguous run of memory, in op order, which is the order
  // chains run them in (graph building leaves the heap fragmented).
  BuildStopwatch watch;
  for (int i = 0; i < slots; ++i) {
    slots_.push_back(std::make_unique<IterationSlot>(i));
    slots_.back()->MakeScopes(plan_, scope_, slots > 1, build_.reduce, this);
  }
  build_times_.scopes_ms = watch.Lap();
  for (auto& slot : slots_) slot->MakeContexts(plan_, places_);
  build_times_.contexts_ms = watch.Lap();
}

void ActorGraph::MakeParts(SsaGraph ssa, VarIndex declared) {
  const int places = static_cast<int>(places_.size());
  RILL_CHECK(places * ssa.streams_per_place < 32768, kInvalidArgument,
             "too many streams: ", places * ssa.streams_per_place);
  for (int p = 0; p < places; ++p) {
    for (int s = 0; s < ssa.streams_per_place; ++s) {
      streams_.push_back(std::make_unique<Stream>(static_cast<int>(streams_.size()), p, s));
    }
  }
  // A device op's buffers are still in use after its launch: none is freed early.
  for (const Place& place : places_) {
    if (place.is_device()) strategy_.release_memory_early = false;
  }
  built_ = std::make_unique<const BuiltGraph>(plan_, std::move(ssa), std::move(declared), places_,
                                              strategy_);
  devices_ = std::make_unique<DeviceLauncher>(*built_, streams_, build_, strategy_.dependency_wait);
  merger_ = std::make_unique<GradientMerger>(places, build_, built_->merges.size());
  feed_rule_ = std::make_unique<FeedRule>(*built_, *scope_, static_cast<int>(slots_.size()));
  // Lanes before the slots' tasks: block ops' graphs are traced under their op's lane.
  tracer_ = std::make_unique<GraphTracer>(*built_, streams_, strategy_);
  async_ = std::make_unique<AsyncOps>(*this, *built_, *runtime_);
  merges_ =
      std::make_unique<MergeScheduler>(*this, *built_, streams_, *devices_, *merger_, *tracer_);
  // The runtime's workers and the thread that calls Run all drain streams.
  const bool oversubscribed = strategy_.linger_poll == LingerPoll::kYield ||
                              (strategy_.linger_poll == LingerPoll::kAuto &&
                               runtime_->threads() + 1 > Runtime::HardwareThreads());
  if (streams_.size() > 1) {
    helpers_ = std::make_unique<IdleHelpers>([this] {
      for (auto& stream : streams_) stream->WakeIfIdle();
    });
  }
  drainer_ = std::make_unique<StreamDrainer>(
      *this, streams_, helpers_.get(), strategy_.spin_before_sleep, oversubscribed, shut_down_);
  watchdog_ = std::make_unique<Watchdog>(*built_, streams_, slots_, *async_, strategy_,
                                         [this](IterationSlot& slot, const std::string& why) {
                                           Abort(slot, ErrorCode::kTimeout, why);
                                         });
}

void ActorGraph::SpawnActors() {
  std::weak_ptr<ActorGraph> weak = weak_from_this();
  caf::actor_system& system = ActorSystemOf(*runtime_);
  for (auto& stream : streams_) stream->set_actor(system.spawn<StreamActor>(weak, stream.get()));
  async_->SpawnActors(weak);
  if (strategy_.watchdog_timeout.count() <= 0) return;
  const auto period = std::max(std::chrono::milliseconds(1), strategy_.watchdog_timeout / 4);
  watchdog_actor_ = system.spawn<WatchdogActor>(weak, period);
}

// -- running iterations ----------------------------------------------------------------

std::vector<Tensor> ActorGraph::Run(const FeedList& feeds,
                                    const std::vector<std::string>& fetches) {
  std::future<std::vector<Tensor>> future;
  IterationSlot& slot = Begin(feeds, fetches, &future);
  // Read before the sources go: once they do, the iteration may end and the slot be reused.
  const uint32_t generation = slot.generation.load(std::memory_order_acquire);
  // Hold the home stream before the sources go out: the ones on it need no wake.
  const bool holding = streams_[0]->TryClaim();
  Kick(slot);
  drainer_->Help(slot, generation, holding);
  return future.get();
}

std::future<std::vector<Tensor>> ActorGraph::RunAsync(const FeedList& feeds,
                                                      const std::vector<std::string>& fetches) {
  std::future<std::vector<Tensor>> future;
  IterationSlot& slot = Begin(feeds, fetches, &future);
  Kick(slot);
  return future;
}

void ActorGraph::RunAsync(const FeedList& feeds, const std::vector<std::string>& fetches,
                          DoneFn done) {
  std::future<std::vector<Tensor>> unused;
  IterationSlot& slot = Begin(feeds, fetches, &unused);
  slot.on_done = std::move(done);
  Kick(slot);
}

IterationSlot& ActorGraph::Begin(const FeedList& feeds, const std::vector<std::string>& fetches,
                                 std::future<std::vector<Tensor>>* future) {
  RILL_CHECK(!shut_down_.load(), kCancelled, "the executor has been shut down");
  feed_rule_->Check(feeds, fetches);
  const FeedList all = feed_rule_->Complete(feeds);
  IterationSlot& slot = AcquireSlot();
  slot.Reset(*built_);
  slot.BindFeeds(*built_, all);
  feed_rule_->BindUnread(slot, all);
  slot.KeepFetched(*built_, fetches);
  // Place copies of parameters never filled yet (the startup program ran
  // after the executor was built) come from the shared scope.
  for (auto& [copy, source, place] : slot.parameter_copies) {
    if (!copy->tensor().initialized() && source != nullptr && source->tensor().initialized()) {
      *copy->mutable_tensor() = source->tensor().CopyTo(CopyPlace(place));
    }
  }
  if (devices_->device_memory()) devices_->MoveParametersToDevices(slot);
  slot.fetches = fetches;
  slot.iteration = next_iteration_.fetch_add(1, std::memory_order_relaxed);
  slot.traced = tracer_->on();
  slot.promise = std::promise<std::vector<Tensor>>();
  *future = slot.promise.get_future();
  slot.started_ns.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  return slot;
}

IterationSlot& ActorGraph::AcquireSlot() {
  // Backpressure: wait for a free slot, giving up when the executor shuts down.
  while (!free_slots_.try_acquire_for(std::chrono::milliseconds(100))) {
    RILL_CHECK(!shut_down_.load(), kCancelled, "the executor has been shut down");
  }
  std::lock_guard<std::mutex> lock(slot_mutex_);
  for (auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire)) {
      slot->busy.store(true, std::memory_order_relaxed);
      return *slot;
    }
  }
  Fail(ErrorCode::kInternal, "no free iteration slot although one was granted");
}

void ActorGraph::ReleaseSlot(IterationSlot& slot) {
  slot.done.store(true, std::memory_order_release);
  slot.busy.store(false, std::memory_order_release);
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  free_slots_.release();
}

void ActorGraph::Kick(IterationSlot& slot) {
  // Wakes sent from here are the driver's messages.
  if (slot.traced) CurrentTrace() = tracer_->Context(tracer_->driver_lane(), slot);
  const bool traced = slot.traced;  // the slot may be reused once the sources are out
  for (int source : built_->sources) {
    const int feed = built_->nodes[source].feed_index;
    if (feed >= 0 && !withheld_feeds_.empty() &&
        std::find(withheld_feeds_.begin(), withheld_feeds_.end(), built_->feeds[feed].name) !=
            withheld_feeds_.end()) {
      continue;
    }
    Dispatch(&slot.tasks[source], nullptr);
  }
  // A block with no ops has no sink to end its iteration: it is over at once.
  if (built_->sink_count == 0) EndGraphPart(slot);
  if (traced) CurrentTrace() = {};
}

void ActorGraph::Dispatch(Task* task, Stream* from) {
  // A blocking op that can try first (read) makes its attempt on its place's
  // stream, as a kernel runs: the places' reads then run at once, each on its
  // place's thread, not one after the other where they became ready (the
  // driver, for a source), which on two places cost each MLP step 90 µs.
  const bool on_stream =
      RunsOnStream(task->kind) ||
      (task->kind == TaskKind::kFiber && built_->nodes[task->node].try_kernel != nullptr);
  if (!on_stream) {
    Invoke(task, nullptr);  // starts where it became ready
  } else if (from != nullptr && task->stream == from->id()) {
    from->PushLocal(task);  // depth first, on this thread
  } else {
    streams_[task->stream]->Submit(task);
  }
}

// The one place that says what running each kind of task means.
void ActorGraph::Invoke(Task* task, Stream* stream) {
  IterationSlot& slot = *slots_[task->slot];
  const uint32_t generation = task->countdown.generation();
  if (generation != slot.generation.load(std::memory_order_acquire)) return;  // left by an abort
  switch (task->kind) {
    case TaskKind::kKernel: RunKernel(task, *stream, slot, generation); break;
    case TaskKind::kFeed: RunFeed(task, *stream, slot, generation); break;
    case TaskKind::kChunk: merges_->RunChunk(task, *stream, slot, generation); break;
    case TaskKind::kCollective: merges_->Issue(task, slot, generation); break;
    case TaskKind::kBlock: async_->StartBlock(task, slot, generation); break;
    case TaskKind::kFiber: async_->StartFiber(task, slot, generation); break;
    case TaskKind::kActor: async_->StartActorOp(task, slot, generation); break;
  }
}

void ActorGraph::RunKernel(Task* task, Stream& stream, IterationSlot& slot, uint32_t generation) {
  const bool cancelled = slot.cancelled.load(std::memory_order_relaxed);
  const int node = task->node;
  const bool traced = slot.traced;
  if (devices_->OnDevice(*task)) {
    if (!cancelled) {
      const int lane = traced ? tracer_->lane(node) : 0;
      const int stream_index = stream.index_in_place();
      devices_->LaunchKernel(*task, slot, [this, task, &slot, node, traced, lane, stream_index] {
        if (slot.cancelled.load(std::memory_order_relaxed)) return;
        const int64_t began = traced ? TraceRecorder::Now() : 0;
        if (traced) CurrentTrace() = tracer_->Context(lane, slot);
        RunOrFail(slot, node, [task] { (*task->kernel)(*task->context); });
        if (traced) {
          tracer_->Span(TraceEventKind::kKernel, lane, node, stream_index, began, slot);
          CurrentTrace() = {};
        }
      });
    }
    stream.CountExecuted();
    Complete(task, slot, generation, &stream);
    return;
  }
  // The successors' countdowns are touched right after the kernel: start
  // fetching their lines now, so the kernel's run time hides the misses.
  Task* tasks = slot.tasks.get();
  for (int32_t i = 0; i < task->successor_count && i < 8; ++i) {
    __builtin_prefetch(&tasks[task->successors[i]], 1, 3);
  }
  int64_t began = 0;
  if (traced) {
    began = TraceRecorder::Now();
    CurrentTrace() = tracer_->Context(tracer_->lane(node), slot);
  }
  if (!cancelled) {
    if (strategy_.dependency_wait == DependencyWait::kStreamSync) {
      drainer_->WaitForProducers(built_->nodes[node], stream);
    }
    stream.SetRunning(node);
    ScopedParallelHelpers lend(helpers_.get());
    RunOrFail(slot, node, [task] { (*task->kernel)(*task->context); });
    stream.SetRunning(-1);
  }
  stream.CountExecuted();
  if (traced && !cancelled) {
    tracer_->Span(TraceEventKind::kKernel, tracer_->lane(node), node, stream.index_in_place(),
                  began, slot);
  }
  Complete(task, slot, generation, &stream);
  if (traced) CurrentTrace() = {};
}

// A feed node binds its value (on a place with device memory: copies it there).
void ActorGraph::RunFeed(Task* task, Stream& stream, IterationSlot& slot, uint32_t generation) {
  const int node = task->node;
  const int feed = built_->nodes[node].feed_index;
  if (devices_->OnDevice(*task)) {
    if (slot.feed_given[feed] && !slot.cancelled.load(std::memory_order_relaxed)) {
      RunOrFail(slot, node, [&] { devices_->StageFeed(node, feed, slot); });
    }
    stream.CountExecuted();
    Complete(task, slot, generation, &stream);
    return;
  }
  const bool traced = slot.traced;
  const int64_t began = traced ? TraceRecorder::Now() : 0;
  if (traced) CurrentTrace() = tracer_->Context(tracer_->lane(node), slot);
  if (slot.feed_given[feed]) {
    slot.feed_vars[feed]->mutable_tensor()->ShareDataWith(slot.feed_values[feed]);
  }
  stream.CountExecuted();
  if (traced) {
    tracer_->Span(TraceEventKind::kKernel, tracer_->lane(node), node, stream.index_in_place(),
                  began, slot);
  }
  Complete(task, slot, generation, &stream);
  if (traced) CurrentTrace() = {};
}

void ActorGraph::Complete(Task* task, IterationSlot& slot, uint32_t generation, Stream* stream) {
  if (slot.traced) tracer_->Sends(*task, slot, devices_->any());
  if (task->has_releases) slot.Release(*built_, task->node);
  if (task->backward) slot.backward_pending.fetch_sub(1, std::memory_order_relaxed);
  IterationSlot::Rearm(task, generation);
  Task* tasks = slot.tasks.get();
  const int32_t* successors = task->successors;
  const int32_t successor_count = task->successor_count;
  const bool sink = task->sink;
  for (int32_t i = 0; i < successor_count; ++i) {
    Task* next = &tasks[successors[i]];
    // An op with one producer is ready now: no count to bring down, no locked
    // instruction (which would also wait for the kernel's stores to drain).
    if (next->predecessor_count == 1 ||
        next->countdown.Arrive(generation) == Countdown::Arrival::kReady) {
      Dispatch(next, stream);
    }
  }
  if (sink && slot.terminal.Arrive(generation) == Countdown::Arrival::kReady) EndGraphPart(slot);
}

void ActorGraph::FailIteration(IterationSlot& slot, int node, std::exception_ptr error) {
  const Error cause = AsError(error);
  slot.Fail(std::make_exception_ptr(
      Error(cause.code(), StrCat(built_->Describe(node), ": ", cause.message()))));
}

void ActorGraph::StartGo(IterationSlot& slot, std::string what, std::function<void()> body) {
  async_->StartGo(slot, std::move(what), std::move(body));
}

void ActorGraph::CountProgress() { async_->CountProgress(); }

void ActorGraph::RunActorOp(int slot, int node, uint32_t generation, OpActor& op) {
  async_->RunActorOp(slot, node, generation, op);
}

// -- the end of an iteration -----------------------------------------------------------------

void ActorGraph::EndOutstanding(IterationSlot& slot) {
  if (slot.outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(slot);
}

void ActorGraph::EndGraphPart(IterationSlot& slot) {
  if (!slot.graph_ended.exchange(true, std::memory_order_acq_rel)) EndOutstanding(slot);
}

std::vector<Tensor> ActorGraph::CollectFetches(IterationSlot& slot) {
  const int n = built_->places();
  std::vector<Tensor> results;
  results.reserve(slot.fetches.size());
  for (const auto& name : slot.fetches) {
    std::vector<Tensor> values;
    for (int p = 0; p < n; ++p) {
      Variable* v = slot.place_scopes[p]->FindVar(name);
      RILL_CHECK(v != nullptr && v->tensor().initialized(), kNotFound, "fetch \"", name,
                 "\" holds no value after the run", n > 1 ? StrCat(" on place ", p) : "");
      values.push_back(devices_->FetchedToHost(v->tensor(), p, results.size(), slot));
    }
    results.push_back(MergeFetch(MergeFor(name), values, slot.place_weights));
  }
  return results;
}

void ActorGraph::Finish(IterationSlot& slot) {
  if (devices_->any()) devices_->SynchronizeDevices(slot);
  std::exception_ptr error = slot.error_value();
  std::vector<Tensor> results;
  if (!error) {
    try {
      results = CollectFetches(slot);
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (slot.traced) tracer_->Iteration(slot);
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    last_stats_.collectives = static_cast<int>(slot.merges.size());
    last_stats_.collectives_overlapping_backward = slot.overlapped.load(std::memory_order_relaxed);
    last_stats_.merge_bytes_raw = last_stats_.merge_bytes = 0;
    for (const MergeState& state : slot.merges) {
      last_stats_.merge_bytes_raw += state.raw_bytes;
      last_stats_.merge_bytes += state.merged_bytes;
    }
  }
  std::promise<std::vector<Tensor>> promise = std::move(slot.promise);
  DoneFn on_done = std::move(slot.on_done);
  slot.on_done = nullptr;
  slot.Clear();
  ReleaseSlot(slot);
  if (on_done) {
    on_done(std::move(results), error);
  } else if (error) {
    promise.set_exception(error);
  } else {
    promise.set_value(std::move(results));
  }
}

void ActorGraph::Abort(IterationSlot& slot, ErrorCode code, const std::string& why) {
  if (slot.aborted.exchange(true)) return;  // waiting for its fibers to end
  {
    std::lock_guard<std::mutex> lock(slot.error_mutex);
    slot.error = std::make_exception_ptr(Error(code, why));
  }
  slot.cancelled.store(true, std::memory_order_relaxed);
  slot.dirty = true;
  // Stale arrivals of this generation must not complete it a second time.
  slot.terminal.Reset(0, 0);
  // Fibers parked on channels return; the last part to end finishes the iteration.
  slot.run->CloseAll();
  EndGraphPart(slot);
}

// -- the rest of the API ---------------------------------------------------------------------

void ActorGraph::OnWake(Stream& stream) {
  const uint32_t traced_wake = stream.TakeWakeId();  // before a new wake can be sent
  stream.ClearWakePending();
  const int64_t received = traced_wake != 0 ? TraceRecorder::Now() : 0;
  drainer_->Drain(stream);
  if (traced_wake != 0) tracer_->WakeReceived(stream, traced_wake, received);
}

void ActorGraph::WatchdogTick() { watchdog_->Tick(in_flight_.load(std::memory_order_acquire)); }

void ActorGraph::TraceDriverWait(WaitKind kind, const std::string& what, int64_t begin_ns) {
  tracer_->DriverWait(kind, what, begin_ns, next_iteration_.load(std::memory_order_relaxed) - 1);
}

void ActorGraph::BroadcastParameters() {
  for (auto& slot : slots_) {
    for (auto& [copy, source, place] : slot->parameter_copies) {
      if (source != nullptr && source->tensor().initialized()) {
        *copy->mutable_tensor() = source->tensor().CopyTo(CopyPlace(place));
      }
    }
  }
}

IterationStats ActorGraph::last_stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return last_stats_;
}

FetchMerge ActorGraph::MergeFor(const std::string& name) const {
  const proto::VarDesc* desc = built_->declared.Find(name);
  if (built_->places() == 1 || desc == nullptr || desc->persistable()) return FetchMerge::kFirst;
  if (desc->shape_size() >= 1 && desc->shape(0) == -1) return FetchMerge::kConcat;
  int64_t n = 1;
  for (int64_t d : desc->shape()) n *= d;
  return n == 1 ? FetchMerge::kMean : FetchMerge::kFirst;
}

void ActorGraph::WithholdFeedsForTesting(const std::vector<std::string>& names) {
  withheld_feeds_ = names;
}

// -- shutdown ------------------------------------------------------------------------------------

void ActorGraph::CancelForShutdown() {
  for (auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire)) continue;
    std::lock_guard<std::mutex> lock(slot->error_mutex);
    if (!slot->error) {
      slot->error = std::make_exception_ptr(
          Error(ErrorCode::kCancelled, "iteration cancelled: the executor was shut down"));
    }
    slot->cancelled.store(true);
  }
  // Parked channel ops and go blocks return once their channels are closed.
  for (auto& slot : slots_) {
    if (slot->busy.load(std::memory_order_acquire)) slot->run->CloseAll();
  }
}

void ActorGraph::Shutdown() {
  if (shut_down_.exchange(true)) return;
  CancelForShutdown();
  // Cancelled iterations skip their kernels and finish quickly (their device
  // work too: each launched kernel checks); one that cannot finish (an input
  // that never comes) is aborted once nothing runs or waits in a queue.
  auto quiet_since = Clock::now();
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (in_flight_.load(std::memory_order_acquire) > 0) {
    if (Clock::now() > give_up) {
      // Only a go block that ignores its closed channels (a loop that never
      // waits) gets here: leave it to the fiber pool's own shutdown.
      Log(LogLevel::kWarning, "shutdown gave up waiting for ", async_->fibers_running(),
          " fiber(s) (go blocks or channel ops) of an iteration");
      break;
    }
    bool active = watchdog_->AnyKernelRunning();
    for (const auto& s : streams_) active |= s->HasQueuedWork() || s->claimed();
    const auto now = Clock::now();
    if (active) {
      quiet_since = now;
    } else if (now - quiet_since > std::chrono::milliseconds(20)) {
      for (auto& slot : slots_) {
        if (slot->busy.load(std::memory_order_acquire)) {
          Abort(*slot, ErrorCode::kCancelled, "the executor was shut down");
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Launched device work that an aborted iteration left runs out (each
  // kernel checks the cancellation) before the streams go.
  if (devices_) devices_->Stop();
  if (async_) async_->Stop(slots_);
  // Drainers linger only while iterations are in flight: wait for them to let go.
  for (const auto& s : streams_) {
    while (s->claimed()) std::this_thread::yield();
  }
  for (auto& s : streams_) {
    if (s->actor()) caf::anon_send_exit(s->actor(), caf::exit_reason::user_shutdown);
  }
  if (watchdog_actor_) caf::anon_send_exit(watchdog_actor_, caf::exit_reason::user_shutdown);
}

}  // namespace rill
