// ActorGraph construction and shutdown. The iteration itself is in
// actor_graph_run.cc, gradient merges in actor_graph_collective.cc, the
// watchdog in actor_graph_watchdog.cc.
#include "actors/executor/actor_graph.h"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <iostream>
#include <thread>

#include "actors/executor/graph_actors.h"
#include "actors/executor/runtime_internals.h"
#include "rill/device.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/validate.h"
#include "runtime/device/blas_threads.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;

// Estimated bytes of a declared variable, unknown dims counted as `batch`.
int64_t EstimatedBytes(const proto::VarDesc* desc, int64_t batch) {
  if (desc == nullptr) return 0;
  int64_t n = static_cast<int64_t>(SizeOf(FromProto(desc->dtype())));
  for (int64_t d : desc->shape()) n *= d < 0 ? batch : d;
  return n;
}

// Place 0 draws the reference executor's random numbers; the others their own.
uint64_t PlaceSeed(uint64_t seed, int place) {
  if (place == 0) return seed;
  uint64_t x = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(place);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 31);
}

}  // namespace

std::shared_ptr<ActorGraph> ActorGraph::Spawn(Runtime* runtime, const proto::ProgramDesc& program,
                                              int block_index, const std::vector<Place>& places,
                                              Scope* scope, const ExecutionStrategy& strategy,
                                              const BuildStrategy& build) {
  std::shared_ptr<ActorGraph> graph(
      new ActorGraph(runtime, program, block_index, places, scope, strategy, build));
  graph->Build();
  graph->SpawnActors();
  return graph;
}

ActorGraph::ActorGraph(Runtime* runtime, const proto::ProgramDesc& program, int block_index,
                       const std::vector<Place>& places, Scope* scope,
                       const ExecutionStrategy& strategy, const BuildStrategy& build)
    : runtime_(runtime),
      program_(program),
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

void ActorGraph::Build() {
  RILL_CHECK(scope_ != nullptr, kInvalidArgument, "the actor executor needs a scope");
  RILL_CHECK(!places_.empty(), kInvalidArgument, "the actor executor needs at least one place");
  Validate(program_);
  RILL_CHECK(block_index_ >= 0 && block_index_ < program_.blocks_size(), kOutOfRange, "block ",
             block_index_, " does not exist (the program has ", program_.blocks_size(), ")");
  plan_ = PlanDataParallel(program_, block_index_, static_cast<int>(places_.size()), build_);
  declared_ = std::make_unique<VarIndex>(plan_.program, block_index_);
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
  options.streams_per_place = std::max(1, strategy_.num_threads / places());
  options.assignment = strategy_.stream_assignment;
  options.build = build_;
  graph_ = BuildSsaGraph(plan_, options);
  const int streams_per_place = graph_.streams_per_place;
  RILL_CHECK(places() * streams_per_place < 32768, kInvalidArgument,
             "too many streams: ", places() * streams_per_place);
  for (int p = 0; p < places(); ++p) {
    for (int s = 0; s < streams_per_place; ++s) {
      streams_.push_back(std::make_unique<Stream>(static_cast<int>(streams_.size()), p, s));
    }
  }
  BuildNodes();
  BuildDeviceStreams();
  // A device op's buffers are still in use after its launch: none is freed early.
  if (!device_streams_.empty()) strategy_.release_memory_early = false;
  BuildReleases();
  RegisterTrace();  // lanes first: block ops' graphs are traced under their op's lane
  for (auto& slot : slots_) BuildTasks(*slot);
  free_slots_.release(slots);
  int blas = strategy_.blas_threads;
  if (blas <= 0) blas = std::max(1, Runtime::HardwareThreads() / strategy_.num_threads);
  SetBlasThreads(blas);
}

// Whether an iteration writes a persistable variable (parameters, optimizer
// state, counters): then the next one depends on it and they cannot overlap.
bool ActorGraph::CarriesStateAcrossIterations() const {
  for (const auto& op : plan_.program.blocks(block_index_).ops()) {
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) {
        const proto::VarDesc* desc = declared_->Find(name);
        if (desc != nullptr && desc->persistable()) return true;
      }
    }
  }
  return false;
}

Scope* ActorGraph::ScopeOf(const Slot& slot, int place) const {
  return place < 0 ? slot.base : slot.place_scopes[static_cast<size_t>(place)];
}

// Scopes: `base` holds what all places share (the given scope, or a child of
// it per slot when iterations overlap). With one place, or for place 0 under
// AllReduce, a place works in `base` itself; other places get a child scope
// with their own copy of every variable they do not share (under AllReduce
// that includes the parameters, copied from `base`).
void ActorGraph::BindSlot(Slot& slot, bool private_scope) {
  const proto::BlockDesc& block = plan_.program.blocks(block_index_);
  slot.run = std::make_unique<SlotRun>(this, &slot);
  for (const auto& var : block.vars()) {
    if (scope_->FindVar(var.name()) == nullptr) scope_->Var(var.name());
  }
  slot.base = scope_;
  if (private_scope) {
    slot.own_base = std::make_unique<Scope>(scope_);
    for (const auto& var : block.vars()) {
      if (!var.persistable()) slot.own_base->Var(var.name());
    }
    slot.base = slot.own_base.get();
  }
  const bool reduce = places() > 1 && build_.reduce == ReduceStrategy::kReduce;
  for (int p = 0; p < places(); ++p) {
    if (places() == 1 || (!reduce && p == 0)) {
      slot.place_scopes.push_back(slot.base);
      continue;
    }
    auto child = std::make_unique<Scope>(slot.base);
    for (const auto& var : block.vars()) {
      if (var.kind() == proto::READER) continue;  // one reader, shared by the places
      if (!var.persistable()) {
        child->Var(var.name());
      } else if (!reduce) {
        slot.parameter_copies.push_back(
            {child->Var(var.name()), slot.base->FindVar(var.name()), p});
      }
    }
    slot.place_scopes.push_back(child.get());
    slot.own_place_scopes.push_back(std::move(child));
  }
  const int ops = block.ops_size();
  slot.contexts.resize(static_cast<size_t>(places() * ops));
  for (int p = 0; p < places(); ++p) {
    for (int i = 0; i < ops; ++i) {
      const OpPlacement& placement = plan_.ops[i];
      Scope* scope = nullptr;
      if (placement.kind == OpPlacement::kEveryPlace) {
        scope = slot.place_scopes[p];
      } else if (placement.kind == OpPlacement::kOnePlace && placement.place == p) {
        scope = slot.base;
      } else {
        continue;
      }
      const proto::OpDesc& desc = block.ops(i);
      slot.contexts[static_cast<size_t>(p * ops + i)] =
          std::make_unique<KernelContext>(desc, GetOpSchema(desc.type()), scope, places_[p],
                                          PlaceSeed(OpSeed(plan_.program, block_index_, i), p));
      slot.contexts[static_cast<size_t>(p * ops + i)]->set_run(slot.run.get());
      slot.contexts[static_cast<size_t>(p * ops + i)]->set_place_index(p);
    }
  }
}

void ActorGraph::BuildNodes() {
  const proto::BlockDesc& block = plan_.program.blocks(block_index_);
  const int streams_per_place = graph_.streams_per_place;
  auto stream_of = [&](const OpNode& op) {
    return op.place < 0 ? -1 : op.place * streams_per_place + op.stream;
  };
  nodes_.resize(graph_.ops.size());
  collectives_.resize(static_cast<size_t>(plan_.collectives));
  merge_residuals_.resize(collectives_.size());
  for (const OpNode& op : graph_.ops) {
    Node& node = nodes_[op.id];
    node.stream = stream_of(op);
    node.predecessor_count = static_cast<uint32_t>(op.predecessors.size());
    successor_begin_.push_back(static_cast<int32_t>(successor_list_.size()));
    successor_list_.insert(successor_list_.end(), op.successors.begin(), op.successors.end());
    for (int pred : op.predecessors) {
      const int s = stream_of(graph_.ops[pred]);
      if (s >= 0 && s != node.stream) node.cross_stream_producers.push_back(s);
    }
    if (op.kind == OpNodeKind::kFeed) {
      node.feed_index = static_cast<int>(feeds_.size());
      const std::string& name = graph_.vars[op.outputs[0]].name;
      feeds_.push_back({name, op.place});
      auto& by_place = feed_index_[name];
      by_place.resize(static_cast<size_t>(places()), -1);
      by_place[op.place] = node.feed_index;
      continue;
    }
    if (op.kind == OpNodeKind::kCollective) {
      RILL_CHECK(op.collective >= 0 && op.collective < plan_.collectives, kInternal,
                 "collective order ", op.collective, " out of range");
      Collective& c = collectives_[op.collective];
      c.node = op.id;
      c.order = op.collective;
      c.reduce = op.type == "reduce";
      c.members = InputVars(block.ops(op.op_index), "X");
      node.collective = op.collective;
      continue;
    }
    if (op.role == proto::ROLE_BACKWARD) ++backward_nodes_;
    const proto::OpDesc& desc = block.ops(op.op_index);
    const Place place = places_[op.place];
    if (BlockRunner::Handles(desc.type())) {
      RILL_CHECK(places() == 1, kUnimplemented, "block ", block_index_, ", op ", op.op_index, " (",
                 desc.type(), "): a program with ", desc.type(),
                 " runs on one place (the op spreads over its own places)");
      node.block = true;
      continue;
    }
    if ((node.actor = FindOpActor(desc.type()))) continue;
    node.kernel = GetOpSchema(desc.type()).FindKernel(place.kind);
    node.fiber = GetOpSchema(desc.type()).blocking();
    if (node.fiber && GetOpSchema(desc.type()).try_kernel()) {
      node.try_kernel = &GetOpSchema(desc.type()).try_kernel();
    }
    if (node.kernel == nullptr) {
      Fail(ErrorCode::kUnimplemented, "block ", block_index_, ", op ", op.op_index, " (",
           desc.type(), "): no kernel for place ", place.ToString(),
           place.kind == Place::Kind::kCuda && !BuiltWithCuda()
               ? " (this build of Rill has no CUDA)"
               : "");
    }
  }
  successor_begin_.push_back(static_cast<int32_t>(successor_list_.size()));
  for (const OpNode& op : graph_.ops) {
    if (op.predecessors.empty()) sources_.push_back(op.id);
  }
  sink_count_ = static_cast<uint32_t>(graph_.Sinks().size());
}

// A variable can be freed after its last reader when it lives only within an
// iteration: not persistable, first written (never read before that) in the
// block, big enough to matter. Only its final version is freed: earlier
// versions share its buffer and are overwritten in place.
void ActorGraph::BuildReleases() {
  if (!strategy_.release_memory_early) return;
  std::unordered_map<std::string, int> final_version;  // "place/name" -> var node id
  std::unordered_map<std::string, bool> read_before_write;
  for (const VarNode& var : graph_.vars) {
    if (var.control || var.persistable) continue;
    const std::string key = StrCat(var.place, "/", var.name);
    if (var.version == 0) read_before_write[key] = true;
    auto it = final_version.find(key);
    if (it == final_version.end() || graph_.vars[it->second].version < var.version) {
      final_version[key] = var.id;
    }
  }
  for (const auto& [key, id] : final_version) {
    const VarNode& var = graph_.vars[id];
    if (var.version == 0 || read_before_write.count(key)) continue;
    // Only tensor buffers are released: an object (a channel) is shared with
    // go blocks that outlive its last reader here.
    const proto::VarDesc* desc = declared_->Find(var.name);
    if (desc != nullptr && desc->kind() != proto::DENSE_TENSOR &&
        desc->kind() != proto::SELECTED_ROWS) {
      continue;
    }
    if (EstimatedBytes(desc, 64) < strategy_.release_min_bytes) continue;
    const int index = static_cast<int>(releasables_.size());
    releasable_index_[var.name].push_back(index);
    Releasable r;
    r.name = var.name;
    r.place = var.place;
    r.readers = var.consumers.empty() ? 1 : static_cast<int>(var.consumers.size());
    releasables_.push_back(r);
    if (var.consumers.empty()) {
      nodes_[var.producer].releases.push_back(index);
    } else {
      for (int consumer : var.consumers) nodes_[consumer].releases.push_back(index);
    }
  }
}

void ActorGraph::BuildTasks(Slot& slot) {
  const size_t n = graph_.ops.size();
  const int ops = op_count();
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
    task.backward = op.kind == OpNodeKind::kCompute && op.role == proto::ROLE_BACKWARD;
    task.countdown.Reset(1, node.predecessor_count);
    switch (op.kind) {
      case OpNodeKind::kFeed: task.kind = TaskKind::kFeed; break;
      case OpNodeKind::kCollective: task.kind = TaskKind::kCollective; break;
      case OpNodeKind::kCompute: {
        task.kind = node.block   ? TaskKind::kBlock
                    : node.fiber ? TaskKind::kFiber
                    : node.actor ? TaskKind::kActor
                                 : TaskKind::kKernel;
        const OpPlacement& placement = plan_.ops[op.op_index];
        const int p = placement.kind == OpPlacement::kOnePlace ? placement.place : op.place;
        task.context = slot.contexts[static_cast<size_t>(p * ops + op.op_index)].get();
        break;
      }
    }
  }
  const size_t chunks = collectives_.size() * static_cast<size_t>(places());
  if (!device_streams_.empty()) {
    // Events of a device place come from one of its streams (CUDA events
    // belong to a device); CPU places' nodes get none.
    slot.node_events.resize(n);
    for (const OpNode& op : graph_.ops) {
      if (op.place >= 0 && comm_streams_[op.place] != nullptr) {
        slot.node_events[op.id] = comm_streams_[op.place]->NewEvent();
      }
    }
    slot.feed_staging.resize(feeds_.size());
    for (auto& staging : slot.feed_staging) staging = std::make_unique<PinnedStaging>();
    slot.chunk_events.resize(chunks);
    for (size_t c = 0; c < collectives_.size(); ++c) {
      for (int p = 0; p < places(); ++p) {
        if (comm_streams_[p] == nullptr) continue;
        slot.chunk_events[c * static_cast<size_t>(places()) + static_cast<size_t>(p)] =
            comm_streams_[p]->NewEvent();
      }
    }
  }
  slot.chunks.reset(new Task[chunks]);
  slot.chunk_countdowns.reset(new Countdown[collectives_.size()]);
  slot.collective_vars.resize(collectives_.size());
  slot.collective_sparse.resize(collectives_.size());
  slot.collective_compressed.resize(collectives_.size());
  slot.collective_bytes.assign(collectives_.size(), {0, 0});
  for (size_t c = 0; c < collectives_.size(); ++c) {
    for (int p = 0; p < places(); ++p) {
      Task& chunk = slot.chunks[c * static_cast<size_t>(places()) + static_cast<size_t>(p)];
      chunk.kind = TaskKind::kChunk;
      chunk.node = collectives_[c].node;
      chunk.slot = static_cast<int16_t>(slot.index);
      chunk.place = static_cast<int16_t>(p);
      chunk.stream = static_cast<int16_t>(p * graph_.streams_per_place);
    }
    slot.collective_sparse[c].assign(collectives_[c].members.size(), 0);
    slot.collective_compressed[c].assign(collectives_[c].members.size(), 0);
    for (const std::string& member : collectives_[c].members) {
      for (int p = 0; p < places(); ++p) {
        slot.collective_vars[c].push_back(slot.place_scopes[p]->FindVar(member));
      }
      slot.collective_vars[c].push_back(slot.base->FindVar(member));
    }
  }
  for (int p = 0; p < places(); ++p) {
    auto order = std::make_unique<PlaceOrder>();
    order->waiting.assign(collectives_.size(), nullptr);
    slot.orders.push_back(std::move(order));
  }
  slot.terminal.Reset(1, sink_count_);
  slot.release_counts.reset(new std::atomic<int32_t>[releasables_.size()]);
  for (size_t r = 0; r < releasables_.size(); ++r) {
    slot.release_counts[r].store(releasables_[r].readers, std::memory_order_relaxed);
    slot.release_vars.push_back(ScopeOf(slot, releasables_[r].place)->Var(releasables_[r].name));
  }
  slot.keep.assign(releasables_.size(), 0);
  slot.feed_values.resize(feeds_.size());
  slot.feed_given.assign(feeds_.size(), 0);
  for (const Feed& feed : feeds_)
    slot.feed_vars.push_back(ScopeOf(slot, feed.place)->Var(feed.name));
  slot.place_weights.assign(static_cast<size_t>(places()), 1.0 / places());
  BuildBlockRunners(slot);
}

// One runner per block op; a forward op and its gradient share the places'
// scopes (keyed by the forward block), children of the op's scope.
void ActorGraph::BuildBlockRunners(Slot& slot) {
  const proto::BlockDesc& block = plan_.program.blocks(block_index_);
  slot.block_runners.resize(graph_.ops.size());
  for (const OpNode& op : graph_.ops) {
    if (!nodes_[op.id].block) continue;
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
    slot.block_runners[op.id] =
        std::make_unique<BlockRunner>(runtime_, plan_.program, desc, outer, raw, strategy_.trace,
                                      trace_ != nullptr ? trace_lane(op.id) : -1);
  }
}

void ActorGraph::SpawnActors() {
  std::weak_ptr<ActorGraph> weak = weak_from_this();
  caf::actor_system& system = ActorSystemOf(*runtime_);
  for (auto& stream : streams_) stream->set_actor(system.spawn<StreamActor>(weak, stream.get()));
  op_actors_.resize(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].actor) op_actors_[n] = system.spawn<OpActorHost>(weak, (*nodes_[n].actor)());
  }
  if (strategy_.watchdog_timeout.count() <= 0) return;
  watchdog_last_change_ = Clock::now();
  const auto period = std::max(std::chrono::milliseconds(1), strategy_.watchdog_timeout / 4);
  watchdog_ = system.spawn<WatchdogActor>(weak, period);
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

std::vector<std::string> ActorGraph::FeedNames() const {
  std::vector<std::string> names;
  for (const Feed& feed : feeds_) {
    if (feed.place == 0) names.push_back(feed.name);
  }
  return names;
}

IterationStats ActorGraph::last_stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return last_stats_;
}

FetchMerge ActorGraph::MergeFor(const std::string& name) const {
  const proto::VarDesc* desc = declared_->Find(name);
  if (places() == 1 || desc == nullptr || desc->persistable()) return FetchMerge::kFirst;
  if (desc->shape_size() >= 1 && desc->shape(0) == -1) return FetchMerge::kConcat;
  int64_t n = 1;
  for (int64_t d : desc->shape()) n *= d;
  return n == 1 ? FetchMerge::kMean : FetchMerge::kFirst;
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
  // Parked channel ops and go blocks return once their channels are closed.
  for (auto& slot : slots_) {
    if (slot->busy.load(std::memory_order_acquire)) slot->run->CloseAll();
  }
  // Cancelled iterations skip their kernels and finish quickly (their device
  // work too: each launched kernel checks); one that cannot
  // finish (an input that never comes) is aborted once nothing runs or waits in a queue.
  auto quiet_since = Clock::now();
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (in_flight_.load(std::memory_order_acquire) > 0) {
    if (Clock::now() > give_up) {
      // Only a go block that ignores its closed channels (a loop that never
      // waits) gets here: leave it to the fiber pool's own shutdown.
      std::cerr << "rill: shutdown gave up waiting for " << fibers_running_.load()
                << " fiber(s) (go blocks or channel ops) of an iteration\n";
      break;
    }
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
  // Launched device work that an aborted iteration left runs out (each
  // kernel checks the cancellation) before the streams go.
  device_streams_.clear();
  comm_streams_.clear();
  for (auto& slot : slots_) {
    for (auto& runner : slot->block_runners) {
      if (runner) runner->Shutdown();
    }
  }
  // Drainers linger only while iterations are in flight: wait for them to let go.
  for (const auto& s : streams_) {
    while (s->claimed()) std::this_thread::yield();
  }
  for (auto& s : streams_) {
    if (s->actor()) caf::anon_send_exit(s->actor(), caf::exit_reason::user_shutdown);
  }
  for (auto& actor : op_actors_) {
    if (actor) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }
  if (watchdog_) caf::anon_send_exit(watchdog_, caf::exit_reason::user_shutdown);
}

}  // namespace rill
