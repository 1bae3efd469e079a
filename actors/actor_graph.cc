#include "actors/actor_graph.h"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <iostream>
#include <thread>
#include <unordered_map>

#include "actors/graph_actors.h"
#include "actors/messages.h"
#include "ops/math/blas.h"
#include "runtime/op_desc.h"
#include "runtime/op_registry.h"
#include "runtime/validate.h"
#include "runtime/var_index.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;

uint32_t NextGeneration(uint32_t g) { return g + 1 == 0 ? 1 : g + 1; }

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Estimated bytes of a declared variable, unknown dims counted as `batch`.
int64_t EstimatedBytes(const proto::VarDesc* desc, int64_t batch) {
  if (desc == nullptr) return 0;
  int64_t n = static_cast<int64_t>(SizeOf(FromProto(desc->dtype())));
  for (int64_t d : desc->shape()) n *= d < 0 ? batch : d;
  return n;
}

}  // namespace

// -- construction --------------------------------------------------------------

std::shared_ptr<ActorGraph> ActorGraph::Spawn(Runtime* runtime,
                                              const proto::ProgramDesc& program, int block_index,
                                              const std::vector<Place>& places, Scope* scope,
                                              const ExecutionStrategy& strategy) {
  std::shared_ptr<ActorGraph> graph(
      new ActorGraph(runtime, program, block_index, places, scope, strategy));
  graph->Build();
  graph->SpawnActors();
  return graph;
}

ActorGraph::ActorGraph(Runtime* runtime, const proto::ProgramDesc& program,
                       int block_index, const std::vector<Place>& places, Scope* scope,
                       const ExecutionStrategy& strategy)
    : runtime_(runtime),
      program_(program),
      block_index_(block_index),
      places_(places),
      scope_(scope),
      strategy_(strategy) {
  if (strategy_.num_threads <= 0) strategy_.num_threads = runtime_->threads();
  if (strategy_.max_iterations_in_flight < 1) strategy_.max_iterations_in_flight = 1;
}

ActorGraph::~ActorGraph() { Shutdown(); }

void ActorGraph::Build() {
  RILL_CHECK(scope_ != nullptr, kInvalidArgument, "the actor executor needs a scope");
  RILL_CHECK(places_.size() == 1, kUnimplemented, "running one program on ", places_.size(),
             " places at once is not supported yet; give one place");
  Validate(program_);
  declared_ = std::make_unique<VarIndex>(program_, block_index_);
  const int slots = CarriesStateAcrossIterations() ? 1 : strategy_.max_iterations_in_flight;
  // Kernel contexts first, while the heap is fresh: each slot's contexts then
  // lie in one contiguous run of memory, in op order, which is the order
  // chains run them in (graph building leaves the heap fragmented).
  for (int i = 0; i < slots; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->index = i;
    BindSlot(*slot, slots > 1);
    slots_.push_back(std::move(slot));
  }
  GraphOptions options;
  options.places = places_;
  options.streams_per_place = strategy_.num_threads;
  options.assignment = strategy_.stream_assignment;
  graph_ = BuildSsaGraph(program_, block_index_, options);
  const int streams_per_place = graph_.streams_per_place;
  for (size_t p = 0; p < places_.size(); ++p) {
    for (int s = 0; s < streams_per_place; ++s) {
      streams_.push_back(std::make_unique<Stream>(static_cast<int>(streams_.size()),
                                                  static_cast<int>(p), s));
    }
  }
  BuildNodes();
  BuildReleases();
  for (auto& slot : slots_) BuildTasks(*slot);
  free_slots_.release(slots);
  int blas = strategy_.blas_threads;
  if (blas <= 0) blas = std::max(1, Runtime::HardwareThreads() / strategy_.num_threads);
  SetBlasThreads(blas);
}

void ActorGraph::BuildNodes() {
  const proto::BlockDesc& block = program_.blocks(block_index_);
  const int streams_per_place = graph_.streams_per_place;
  RILL_CHECK(streams_.size() < 32768, kInvalidArgument, "too many streams: ", streams_.size());
  nodes_.resize(graph_.ops.size());
  for (const OpNode& op : graph_.ops) {
    Node& node = nodes_[op.id];
    node.stream = op.place * streams_per_place + op.stream;
    node.predecessor_count = static_cast<uint32_t>(op.predecessors.size());
    successor_begin_.push_back(static_cast<int32_t>(successor_list_.size()));
    successor_list_.insert(successor_list_.end(), op.successors.begin(), op.successors.end());
    for (int pred : op.predecessors) {
      const int s = graph_.ops[pred].place * streams_per_place + graph_.ops[pred].stream;
      if (s != node.stream) node.cross_stream_producers.push_back(s);
    }
    if (op.kind == OpNodeKind::kFeed) {
      node.feed_index = static_cast<int>(feed_names_.size());
      feed_names_.push_back(graph_.vars[op.outputs[0]].name);
      feed_index_[feed_names_.back()] = node.feed_index;
      continue;
    }
    const proto::OpDesc& desc = block.ops(op.op_index);
    const OpSchema& schema = GetOpSchema(desc.type());
    const Place place = places_[op.place];
    node.kernel = schema.FindKernel(place.kind);
    if (node.kernel == nullptr) {
      Fail(ErrorCode::kUnimplemented, "block ", block_index_, ", op ", op.op_index, " (",
           desc.type(), "): no kernel for place ", place.ToString());
    }
  }
  successor_begin_.push_back(static_cast<int32_t>(successor_list_.size()));
  for (const OpNode& op : graph_.ops) {
    if (op.predecessors.empty()) sources_.push_back(op.id);
  }
  sink_count_ = static_cast<uint32_t>(graph_.Sinks().size());
}

// Whether an iteration writes a persistable variable (parameters, optimizer
// state, counters): then the next one depends on it and they cannot overlap.
bool ActorGraph::CarriesStateAcrossIterations() const {
  for (const auto& op : program_.blocks(block_index_).ops()) {
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) {
        const proto::VarDesc* desc = declared_->Find(name);
        if (desc != nullptr && desc->persistable()) return true;
      }
    }
  }
  return false;
}

// A variable can be freed after its last reader when it lives only within an
// iteration: not persistable, first written (never read before that) in the
// block, big enough to matter. Only its final version is freed: earlier
// versions share its buffer and are overwritten in place.
void ActorGraph::BuildReleases() {
  if (!strategy_.release_memory_early) return;
  const VarIndex& declared = *declared_;
  std::unordered_map<std::string, int> final_version;  // name -> var node id (one place)
  std::unordered_map<std::string, bool> read_before_write;
  for (const VarNode& var : graph_.vars) {
    if (var.control || var.persistable) continue;
    if (var.version == 0) read_before_write[var.name] = true;
    auto it = final_version.find(var.name);
    if (it == final_version.end() || graph_.vars[it->second].version < var.version) {
      final_version[var.name] = var.id;
    }
  }
  for (const auto& [name, id] : final_version) {
    const VarNode& var = graph_.vars[id];
    if (var.version == 0 || read_before_write.count(name)) continue;
    if (EstimatedBytes(declared.Find(name), 64) < strategy_.release_min_bytes) continue;
    const int index = static_cast<int>(releasables_.size());
    releasable_index_[name] = index;
    Releasable r;
    r.name = name;
    r.readers = var.consumers.empty() ? 1 : static_cast<int>(var.consumers.size());
    releasables_.push_back(r);
    if (var.consumers.empty()) {
      nodes_[var.producer].releases.push_back(index);
    } else {
      for (int consumer : var.consumers) nodes_[consumer].releases.push_back(index);
    }
  }
}

void ActorGraph::BindSlot(Slot& slot, bool private_scope) {
  const proto::BlockDesc& block = program_.blocks(block_index_);
  for (const auto& var : block.vars()) {
    if (scope_->FindVar(var.name()) == nullptr) scope_->Var(var.name());
  }
  if (private_scope) {
    slot.own_scope = std::make_unique<Scope>(scope_);
    for (const auto& var : block.vars()) {
      if (!var.persistable()) slot.own_scope->Var(var.name());
    }
    slot.scope = slot.own_scope.get();
  } else {
    slot.scope = scope_;
  }
  slot.contexts.resize(static_cast<size_t>(block.ops_size()));
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& desc = block.ops(i);
    slot.contexts[i] = std::make_unique<KernelContext>(desc, GetOpSchema(desc.type()), slot.scope,
                                                       places_[0], OpSeed(program_, block_index_, i));
  }
}

void ActorGraph::BuildTasks(Slot& slot) {
  const size_t n = graph_.ops.size();
  slot.tasks.reset(new Task[n]);
  for (const OpNode& op : graph_.ops) {
    const Node& node = nodes_[op.id];
    Task& task = slot.tasks[op.id];
    task.node = op.id;
    task.slot = static_cast<int16_t>(slot.index);
    task.stream = static_cast<int16_t>(node.stream);
    task.predecessor_count = node.predecessor_count;
    task.successors = successor_list_.data() + successor_begin_[op.id];
    task.successor_count = successor_begin_[op.id + 1] - successor_begin_[op.id];
    task.sink = task.successor_count == 0;
    task.has_releases = !node.releases.empty();
    task.kernel = node.kernel;
    task.countdown.Reset(NextGeneration(0), node.predecessor_count);
    if (op.kind == OpNodeKind::kCompute) task.context = slot.contexts[op.op_index].get();
  }
  slot.terminal.Reset(NextGeneration(0), sink_count_);
  slot.release_counts.reset(new std::atomic<int32_t>[releasables_.size()]);
  for (size_t r = 0; r < releasables_.size(); ++r) {
    slot.release_counts[r].store(releasables_[r].readers, std::memory_order_relaxed);
    slot.release_vars.push_back(slot.scope->Var(releasables_[r].name));
  }
  slot.keep.assign(releasables_.size(), 0);
  slot.feed_values.resize(feed_names_.size());
  slot.feed_given.assign(feed_names_.size(), 0);
  for (const auto& name : feed_names_) slot.feed_vars.push_back(slot.scope->Var(name));
}

void ActorGraph::SpawnActors() {
  std::weak_ptr<ActorGraph> weak = weak_from_this();
  caf::actor_system& system = runtime_->system();
  for (auto& stream : streams_) stream->set_actor(system.spawn<StreamActor>(weak, stream.get()));
  if (strategy_.watchdog_timeout.count() <= 0) return;
  watchdog_last_change_ = Clock::now();
  const auto period = std::max(std::chrono::milliseconds(1), strategy_.watchdog_timeout / 4);
  watchdog_ = system.spawn<WatchdogActor>(weak, period);
}

// -- running an iteration --------------------------------------------------------

std::vector<Tensor> ActorGraph::Run(const FeedList& feeds, const std::vector<std::string>& fetches) {
  std::future<std::vector<Tensor>> future;
  Slot& slot = Begin(feeds, fetches, &future);
  Help(slot, future);
  return future.get();
}

std::future<std::vector<Tensor>> ActorGraph::RunAsync(const FeedList& feeds,
                                                      const std::vector<std::string>& fetches) {
  std::future<std::vector<Tensor>> future;
  Slot& slot = Begin(feeds, fetches, &future);
  Kick(slot);
  return future;
}

void ActorGraph::CheckFeeds(const FeedList& feeds) const {
  for (const auto& [name, tensor] : feeds) {
    const proto::VarDesc* desc = declared_->Find(name);
    RILL_CHECK(desc != nullptr, kNotFound, "feed \"", name, "\" is not a variable of block ",
               block_index_);
    RILL_CHECK(tensor.initialized(), kInvalidArgument, "feed \"", name, "\" holds no value");
    RILL_CHECK(FromProto(desc->dtype()) == tensor.dtype(), kInvalidArgument, "feed \"", name,
               "\" is ", tensor.Describe(), " but the variable is declared ",
               DataTypeName(FromProto(desc->dtype())));
    RILL_CHECK(ShapesCompatible(VarShape(*desc), tensor.shape()), kInvalidArgument, "feed \"",
               name, "\" has shape ", ShapeToString(tensor.shape()),
               " but the variable is declared ", ShapeToString(VarShape(*desc)));
  }
}

ActorGraph::Slot& ActorGraph::Begin(const FeedList& feeds, const std::vector<std::string>& fetches,
                                    std::future<std::vector<Tensor>>* future) {
  RILL_CHECK(!shut_down_.load(), kInvalidArgument, "the executor has been shut down");
  CheckFeeds(feeds);
  for (const auto& name : fetches) {
    RILL_CHECK(declared_->Find(name) != nullptr, kNotFound, "fetch \"", name,
               "\" is not a variable of block ", block_index_);
  }
  // Backpressure: wait for a free slot, giving up when the executor shuts down.
  while (!free_slots_.try_acquire_for(std::chrono::milliseconds(100))) {
    RILL_CHECK(!shut_down_.load(), kInvalidArgument, "the executor has been shut down");
  }
  Slot* picked = nullptr;
  {
    std::lock_guard<std::mutex> lock(slot_mutex_);
    for (auto& slot : slots_) {
      if (!slot->busy.load(std::memory_order_acquire)) {
        picked = slot.get();
        break;
      }
    }
    RILL_CHECK(picked != nullptr, kInternal, "no free iteration slot although one was granted");
    picked->busy.store(true, std::memory_order_relaxed);
  }
  Slot& slot = *picked;
  try {
    // Everything that can fail comes before the slot is reset for this iteration.
    for (const auto& [name, tensor] : feeds) {
      RILL_CHECK(feed_index_.count(name) || slots_.size() == 1, kInvalidArgument, "feed \"", name,
                 "\" is not an input of the program (written before it is read)");
    }
    for (size_t i = 0; i < feed_names_.size(); ++i) {
      bool given = false;
      for (const auto& feed : feeds) given |= feed.first == feed_names_[i];
      if (given || slot.feed_vars[i]->tensor().initialized()) continue;
      const OpNode* reader = nullptr;
      for (const OpNode& op : graph_.ops) {
        if (op.kind == OpNodeKind::kFeed && graph_.vars[op.outputs[0]].name == feed_names_[i]) {
          const VarNode& var = graph_.vars[op.outputs[0]];
          if (!var.consumers.empty()) reader = &graph_.ops[var.consumers[0]];
          break;
        }
      }
      Fail(ErrorCode::kInvalidArgument, "block ", block_index_, ", op ",
           reader ? reader->op_index : -1, " (", reader ? reader->type : "?", "): feed \"",
           feed_names_[i], "\" is missing (the op reads it and nothing before writes it)");
    }
  } catch (...) {
    slot.busy.store(false, std::memory_order_release);
    free_slots_.release();
    throw;
  }
  ResetSlot(slot);
  for (const auto& [name, tensor] : feeds) {
    auto it = feed_index_.find(name);
    if (it != feed_index_.end()) {
      slot.feed_values[it->second] = tensor;
      slot.feed_given[it->second] = 1;
    } else {
      // Not read before written (checked above: one slot): the reference
      // executor would bind it all the same.
      slot.scope->Var(name)->mutable_tensor()->ShareDataWith(tensor);
    }
  }
  for (const auto& name : fetches) {
    auto it = releasable_index_.find(name);
    if (it != releasable_index_.end()) slot.keep[it->second] = 1;
  }
  slot.fetches = fetches;
  slot.promise = std::promise<std::vector<Tensor>>();
  *future = slot.promise.get_future();
  slot.started_ns.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  return slot;
}

void ActorGraph::ResetSlot(Slot& slot) {
  const uint32_t generation = NextGeneration(slot.generation.load(std::memory_order_relaxed));
  if (slot.dirty) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      slot.tasks[i].countdown.Reset(generation, nodes_[i].predecessor_count);
    }
    for (size_t r = 0; r < releasables_.size(); ++r) {
      slot.release_counts[r].store(releasables_[r].readers, std::memory_order_relaxed);
    }
    slot.dirty = false;
  }
  slot.terminal.Reset(generation, sink_count_);
  slot.cancelled.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(slot.error_mutex);
    slot.error = nullptr;
  }
  slot.generation.store(generation, std::memory_order_release);
  slot.done.store(false, std::memory_order_release);
}

void ActorGraph::Kick(Slot& slot) {
  for (int source : sources_) {
    const Node& node = nodes_[source];
    if (node.feed_index >= 0 && !withheld_feeds_.empty() &&
        std::find(withheld_feeds_.begin(), withheld_feeds_.end(), feed_names_[node.feed_index]) !=
            withheld_feeds_.end()) {
      continue;
    }
    streams_[node.stream]->Submit(&slot.tasks[source]);
  }
}

void ActorGraph::Help(Slot& slot, std::future<std::vector<Tensor>>& future) {
  const uint32_t generation = slot.generation.load(std::memory_order_acquire);
  auto done = [&] {
    return slot.done.load(std::memory_order_acquire) ||
           slot.generation.load(std::memory_order_acquire) != generation;
  };
  // Hold the home stream before the sources go out: the ones on it need no wake.
  Stream& home = *streams_[0];
  bool holding = home.TryClaim();
  Kick(slot);
  auto run_available = [this](Stream& s) {
    bool ran = false;
    while (Task* task = s.Next()) {
      RunTask(task, s);
      ran = true;
    }
    return ran;
  };
  auto idle_since = Clock::now();
  int spins = 0;
  while (!done()) {
    bool worked = false;
    if (!holding) holding = home.TryClaim();
    if (holding) worked |= run_available(home);
    for (size_t i = 1; i < streams_.size() && !done(); ++i) {
      Stream& s = *streams_[i];
      if (!s.HasQueuedWork() || !s.TryClaim()) continue;
      do {
        worked |= run_available(s);
      } while (s.ReleaseOrReclaim());
    }
    if (worked) {
      idle_since = Clock::now();
      spins = 0;
      continue;
    }
    CpuRelax();
    if (++spins % 64 == 0 && Clock::now() - idle_since > strategy_.spin_before_sleep) break;
  }
  if (holding) {
    while (home.ReleaseOrReclaim()) run_available(home);
  }
  future.wait();
}

void ActorGraph::OnWake(Stream& stream) {
  stream.ClearWakePending();
  Drain(stream);
}

void ActorGraph::Drain(Stream& stream) {
  if (!stream.TryClaim()) return;
  do {
    auto idle_since = Clock::now();
    int spins = 0;
    while (true) {
      if (Task* task = stream.Next()) {
        RunTask(task, stream);
        spins = 0;
        idle_since = Clock::now();
        continue;
      }
      // Linger: more work usually follows within microseconds while an
      // iteration runs, and holding the claim saves the producer a wake.
      if (in_flight_.load(std::memory_order_acquire) == 0) break;
      CpuRelax();
      if (++spins % 64 == 0 && Clock::now() - idle_since > strategy_.spin_before_sleep) break;
    }
  } while (stream.ReleaseOrReclaim());
}

void ActorGraph::RunTask(Task* task, Stream& stream) {
  Slot& slot = *slots_[task->slot];
  const uint32_t generation = task->countdown.generation();
  if (generation != slot.generation.load(std::memory_order_acquire)) return;  // left by an abort
  Task* tasks = slot.tasks.get();
  const int32_t* successors = task->successors;
  const int32_t successor_count = task->successor_count;
  // The successors' countdowns are touched right after the kernel: start
  // fetching their lines now, so the kernel's run time hides the misses.
  for (int32_t i = 0; i < successor_count && i < 8; ++i) {
    __builtin_prefetch(&tasks[successors[i]], 1, 3);
  }
  if (task->kernel == nullptr) {
    const int feed = nodes_[task->node].feed_index;
    if (slot.feed_given[feed]) {
      slot.feed_vars[feed]->mutable_tensor()->ShareDataWith(slot.feed_values[feed]);
    }
  } else if (!slot.cancelled.load(std::memory_order_relaxed)) {
    if (strategy_.dependency_wait == DependencyWait::kStreamSync) {
      WaitForProducerStreams(task->node, stream);
    }
    stream.SetRunning(task->node);
    try {
      (*task->kernel)(*task->context);
    } catch (const Error& e) {
      FailIteration(slot, task->node, e);
    } catch (const std::exception& e) {
      FailIteration(slot, task->node, Error(ErrorCode::kInternal, e.what()));
    } catch (...) {
      FailIteration(slot, task->node, Error(ErrorCode::kInternal, "unknown exception"));
    }
    stream.SetRunning(-1);
  }
  stream.CountExecuted();
  if (task->has_releases) Release(task->node, slot);
  task->countdown.Reset(NextGeneration(generation), task->predecessor_count);
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
  if (sink && slot.terminal.Arrive(generation) == Countdown::Arrival::kReady) Finish(slot);
}

void ActorGraph::Dispatch(Task* task, Stream& from) {
  if (task->stream == from.id()) {
    from.PushLocal(task);
  } else {
    streams_[task->stream]->Submit(task);
  }
}

// Debugging strategy: before a consumer runs, each stream it depends on must
// have gone idle (nothing queued, no kernel running), as a host-side stream
// synchronisation would. Bounded, so two streams waiting on each other go on.
void ActorGraph::WaitForProducerStreams(int node, Stream& self) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(10);
  for (int s : nodes_[node].cross_stream_producers) {
    Stream& producer = *streams_[s];
    if (&producer == &self) continue;
    while ((producer.HasQueuedWork() || producer.running_node() >= 0) && Clock::now() < deadline) {
      CpuRelax();
    }
  }
}

void ActorGraph::Release(int node, Slot& slot) {
  for (int r : nodes_[node].releases) {
    if (slot.release_counts[r].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    slot.release_counts[r].store(releasables_[r].readers, std::memory_order_relaxed);
    if (!slot.keep[r]) *slot.release_vars[r]->mutable_tensor() = Tensor();
  }
}

std::string ActorGraph::DescribeNode(int id) const {
  const OpNode& op = graph_.ops[id];
  const std::string where =
      StrCat(" on ", places_[op.place].ToString(), " stream ", op.stream);
  if (op.kind == OpNodeKind::kFeed) {
    return StrCat("feed \"", graph_.vars[op.outputs[0]].name, "\"", where);
  }
  return StrCat("block ", block_index_, ", op ", op.op_index, " (", op.type, ")", where);
}

void ActorGraph::FailIteration(Slot& slot, int node, const Error& error) {
  const Error located(error.code(), StrCat(DescribeNode(node), ": ", error.message()));
  std::lock_guard<std::mutex> lock(slot.error_mutex);
  if (!slot.error) slot.error = std::make_exception_ptr(located);
  slot.cancelled.store(true, std::memory_order_relaxed);
}

void ActorGraph::Finish(Slot& slot) {
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(slot.error_mutex);
    error = slot.error;
  }
  std::vector<Tensor> results;
  if (!error) {
    try {
      results.reserve(slot.fetches.size());
      for (const auto& name : slot.fetches) {
        Variable* v = slot.scope->FindVar(name);
        RILL_CHECK(v != nullptr && v->tensor().initialized(), kNotFound, "fetch \"", name,
                   "\" holds no value after the run");
        results.push_back(v->tensor());
      }
    } catch (...) {
      error = std::current_exception();
    }
  }
  std::promise<std::vector<Tensor>> promise = std::move(slot.promise);
  for (auto& value : slot.feed_values) value = Tensor();
  std::fill(slot.feed_given.begin(), slot.feed_given.end(), 0);
  std::fill(slot.keep.begin(), slot.keep.end(), 0);
  slot.fetches.clear();
  slot.done.store(true, std::memory_order_release);
  slot.busy.store(false, std::memory_order_release);
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  free_slots_.release();
  if (error) {
    promise.set_exception(error);
  } else {
    promise.set_value(std::move(results));
  }
}

// Ends an iteration that cannot finish (nothing runs, nothing is queued):
// fails its future and marks the slot for a full reset before reuse.
void ActorGraph::Abort(Slot& slot, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(slot.error_mutex);
    slot.error = std::make_exception_ptr(Error(ErrorCode::kTimeout, why));
  }
  slot.cancelled.store(true, std::memory_order_relaxed);
  slot.dirty = true;
  // Stale arrivals of this generation must not complete it a second time.
  slot.terminal.Reset(0, 0);
  Finish(slot);
}

// -- watchdog --------------------------------------------------------------------

bool ActorGraph::AnyKernelRunning() const {
  for (const auto& s : streams_) {
    if (s->running_node() >= 0) return true;
  }
  return false;
}

std::string ActorGraph::StallReport(Slot& slot) const {
  const uint32_t generation = slot.generation.load(std::memory_order_acquire);
  auto not_run = [&](int id) { return slot.tasks[id].countdown.generation() == generation; };
  std::string report;
  int listed = 0;
  for (const OpNode& op : graph_.ops) {
    if (!not_run(op.id) || slot.tasks[op.id].countdown.remaining() == 0) continue;
    // Report ops whose missing producers are not waiting themselves: the frontier.
    std::vector<int> missing;
    bool frontier = true;
    for (int pred : op.predecessors) {
      if (!not_run(pred)) continue;
      missing.push_back(pred);
      frontier &= slot.tasks[pred].countdown.remaining() == 0;
    }
    if (!frontier || missing.empty()) continue;
    if (++listed > 20) {
      report += "  ...\n";
      break;
    }
    report += StrCat("  ", DescribeNode(op.id), " waits for:\n");
    for (int pred : missing) {
      std::string what;
      for (int var : op.inputs) {
        const VarNode& v = graph_.vars[var];
        if (v.producer != pred) continue;
        if (!what.empty()) what += ", ";
        what += v.control ? std::string("a control edge") : StrCat("input \"", v.name, "\"");
      }
      report += StrCat("    ", what, " from ", DescribeNode(pred), ", which never ran\n");
    }
  }
  if (report.empty()) report = "  (no op waits on a missing producer)\n";
  return report;
}

void ActorGraph::WatchdogTick() {
  const auto now = Clock::now();
  if (in_flight_.load(std::memory_order_acquire) == 0) {
    watchdog_last_change_ = now;
    watchdog_reported_ = false;
    return;
  }
  uint64_t progress = 0;
  for (const auto& s : streams_) progress += s->executed();
  if (progress != watchdog_progress_) {
    watchdog_progress_ = progress;
    watchdog_last_change_ = now;
    watchdog_reported_ = false;
    return;
  }
  auto since = watchdog_last_change_;
  for (const auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire)) continue;
    const Clock::time_point started(
        Clock::duration(slot->started_ns.load(std::memory_order_acquire)));
    since = std::max(since, started);
  }
  const auto stalled = std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
  if (stalled < strategy_.watchdog_timeout) return;
  auto emit = [this](const std::string& text) {
    if (strategy_.on_watchdog_report) {
      strategy_.on_watchdog_report(text);
    } else {
      std::cerr << "rill watchdog: " << text;
    }
  };
  if (AnyKernelRunning()) {  // slow, not stuck: say so once
    if (!watchdog_reported_) {
      std::string text = StrCat("no op finished for ", stalled.count(), " ms; running now:\n");
      for (const auto& s : streams_) {
        if (s->running_node() >= 0) text += StrCat("  ", DescribeNode(s->running_node()), "\n");
      }
      emit(text);
      watchdog_reported_ = true;
    }
    return;
  }
  bool queued = false;
  for (const auto& s : streams_) {
    if (s->HasQueuedWork()) {
      queued = true;
      if (!s->claimed()) caf::anon_send(s->actor(), wake_atom::value);
    }
  }
  if (queued) return;  // work is waiting for a thread: woken, look again next tick
  for (auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire) || slot->done.load()) continue;
    const std::string why = StrCat("iteration made no progress for ", stalled.count(),
                                   " ms (watchdog); ops still waiting:\n", StallReport(*slot));
    emit(why);
    Abort(*slot, why);
  }
  watchdog_last_change_ = now;
}

void ActorGraph::WithholdFeedsForTesting(const std::vector<std::string>& names) {
  withheld_feeds_ = names;
}

// -- shutdown --------------------------------------------------------------------

void ActorGraph::Shutdown() {
  if (shut_down_.exchange(true)) return;
  for (auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire)) continue;
    std::lock_guard<std::mutex> lock(slot->error_mutex);
    if (!slot->error) {
      slot->error = std::make_exception_ptr(
          Error(ErrorCode::kInvalidArgument, "iteration cancelled: the executor was shut down"));
    }
    slot->cancelled.store(true);
  }
  // Cancelled iterations skip their kernels and finish quickly; one that cannot
  // finish (an input that never comes) is aborted once nothing runs or waits in a queue.
  auto quiet_since = Clock::now();
  while (in_flight_.load(std::memory_order_acquire) > 0) {
    bool active = AnyKernelRunning();
    for (const auto& s : streams_) active |= s->HasQueuedWork() || s->claimed();
    const auto now = Clock::now();
    if (active) {
      quiet_since = now;
    } else if (now - quiet_since > std::chrono::milliseconds(20)) {
      for (auto& slot : slots_) {
        if (slot->busy.load(std::memory_order_acquire)) Abort(*slot, "the executor was shut down");
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Drainers linger only while iterations are in flight: wait for them to let go.
  for (const auto& s : streams_) {
    while (s->claimed()) std::this_thread::yield();
  }
  for (auto& s : streams_) {
    if (s->actor()) caf::anon_send_exit(s->actor(), caf::exit_reason::user_shutdown);
  }
  if (watchdog_) caf::anon_send_exit(watchdog_, caf::exit_reason::user_shutdown);
}

}  // namespace rill
