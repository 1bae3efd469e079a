// One iteration of an ActorGraph: beginning it (slot, feeds), running tasks
// on streams, passing readiness on, finishing (fetches) or failing it.
#include <caf/send.hpp>
#include <thread>

#include "actors/executor/actor_graph.h"
#include "actors/executor/messages.h"
#include "actors/trace/trace_context.h"
#include "rill/op_desc.h"

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

bool SplitsAlongBatch(const proto::VarDesc& desc) {
  return desc.shape_size() >= 1 && desc.shape(0) == -1;
}

}  // namespace

std::vector<Tensor> ActorGraph::Run(const FeedList& feeds,
                                    const std::vector<std::string>& fetches) {
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

void ActorGraph::RunAsync(const FeedList& feeds, const std::vector<std::string>& fetches,
                          DoneFn done) {
  std::future<std::vector<Tensor>> unused;
  Slot& slot = Begin(feeds, fetches, &unused);
  slot.on_done = std::move(done);
  Kick(slot);
}

void ActorGraph::CheckFeeds(const FeedList& feeds) const {
  int64_t batch = -1;
  std::string batch_feed;
  for (const auto& [name, tensor] : feeds) {
    const proto::VarDesc* desc = declared_->Find(name);
    CheckFeed(desc, name, tensor, block_index_);
    if (places() == 1 || !SplitsAlongBatch(*desc)) continue;
    if (batch < 0) {
      batch = tensor.dim(0);
      batch_feed = name;
    }
    RILL_CHECK(tensor.dim(0) == batch, kInvalidArgument,
               "feeds split over the places must have "
               "as many rows: \"",
               batch_feed, "\" has ", batch, ", \"", name, "\" has ", tensor.dim(0));
  }
}

// Before the slot is reset: every feed node's variable must be fed (or, with
// one slot, already hold a value, as the reference executor allows).
void ActorGraph::CheckMissingFeeds(const Slot& slot, const FeedList& feeds) const {
  for (size_t i = 0; i < feeds_.size(); ++i) {
    const std::string& name = feeds_[i].name;
    bool given = name == plan_.loss_scale;
    for (const auto& feed : feeds) given |= feed.first == name;
    if (given || (slots_.size() == 1 && slot.feed_vars[i]->tensor().initialized())) continue;
    const OpNode* reader = nullptr;
    for (const OpNode& op : graph_.ops) {
      if (op.kind == OpNodeKind::kFeed && graph_.vars[op.outputs[0]].name == name) {
        const VarNode& var = graph_.vars[op.outputs[0]];
        if (!var.consumers.empty()) reader = &graph_.ops[var.consumers[0]];
        break;
      }
    }
    Fail(ErrorCode::kInvalidArgument, "block ", block_index_, ", op ",
         reader ? reader->op_index : -1, " (", reader ? reader->type : "?", "): feed \"", name,
         "\" is missing (the op reads it and nothing before writes it)");
  }
  for (const auto& [name, tensor] : feeds) {
    RILL_CHECK(feed_index_.count(name) || (slots_.size() == 1 && places() == 1), kInvalidArgument,
               "feed \"", name, "\" is not an input of the program (written before it is read)");
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
    CheckMissingFeeds(slot, feeds);
  } catch (...) {
    slot.busy.store(false, std::memory_order_release);
    free_slots_.release();
    throw;
  }
  ResetSlot(slot);
  BindFeeds(slot, feeds);
  for (const auto& name : fetches) {
    auto it = releasable_index_.find(name);
    if (it == releasable_index_.end()) continue;
    for (int r : it->second) slot.keep[r] = 1;
  }
  // Place copies of parameters never filled yet (the startup program ran
  // after the executor was built) come from the shared scope.
  for (auto& [copy, source, place] : slot.parameter_copies) {
    if (!copy->tensor().initialized() && source != nullptr && source->tensor().initialized()) {
      *copy->mutable_tensor() = source->tensor().CopyTo(CopyPlace(place));
    }
  }
  if (!copy_streams_.empty()) MoveParametersToDevices(slot);
  slot.fetches = fetches;
  slot.iteration = next_iteration_.fetch_add(1, std::memory_order_relaxed);
  slot.traced = trace_ != nullptr && trace_->on();
  slot.promise = std::promise<std::vector<Tensor>>();
  *future = slot.promise.get_future();
  slot.started_ns.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  return slot;
}

// Splits batch feeds over the places (rows of the first place first), gives
// the others to every place, and feeds each place its loss scale n_p / B.
void ActorGraph::BindFeeds(Slot& slot, const FeedList& feeds) {
  std::vector<int64_t> rows;
  for (const auto& [name, tensor] : feeds) {
    const proto::VarDesc* desc = declared_->Find(name);
    if (places() > 1 && SplitsAlongBatch(*desc)) {
      rows = SplitRows(tensor.dim(0), places());
      break;
    }
  }
  int64_t batch = 0;
  for (int64_t r : rows) batch += r;
  for (int p = 0; p < places(); ++p) {
    slot.place_weights[p] = rows.empty() || batch == 0
                                ? 1.0 / places()
                                : static_cast<double>(rows[p]) / static_cast<double>(batch);
  }
  for (const auto& [name, tensor] : feeds) {
    auto it = feed_index_.find(name);
    if (it == feed_index_.end()) {
      // Not read before written (one place, one slot: checked): the reference
      // executor would bind it all the same.
      slot.base->Var(name)->mutable_tensor()->ShareDataWith(tensor);
      continue;
    }
    const bool split = !rows.empty() && SplitsAlongBatch(*declared_->Find(name));
    const std::vector<Tensor> slices = split ? SplitBatch(tensor, rows) : std::vector<Tensor>{};
    for (int p = 0; p < places(); ++p) {
      const int index = it->second[p];
      if (index < 0) continue;
      slot.feed_values[index] = split ? slices[p] : tensor;
      slot.feed_given[index] = 1;
    }
  }
  if (plan_.loss_scale.empty()) return;
  const DataType dtype = FromProto(declared_->Find(plan_.loss_scale)->dtype());
  const auto& indices = feed_index_.at(plan_.loss_scale);
  for (int p = 0; p < places(); ++p) {
    Tensor scale(dtype, {1});
    scale.Fill(slot.place_weights[p]);
    slot.feed_values[indices[p]] = scale;
    slot.feed_given[indices[p]] = 1;
  }
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
  for (auto& order : slot.orders) {
    std::lock_guard<std::mutex> lock(order->mutex);
    order->next = 0;
    std::fill(order->waiting.begin(), order->waiting.end(), nullptr);
  }
  slot.backward_pending.store(backward_nodes_, std::memory_order_relaxed);
  slot.overlapped.store(0, std::memory_order_relaxed);
  std::fill(slot.collective_bytes.begin(), slot.collective_bytes.end(),
            std::pair<int64_t, int64_t>{});
  slot.cancelled.store(false, std::memory_order_relaxed);
  slot.aborted.store(false, std::memory_order_relaxed);
  slot.graph_ended.store(false, std::memory_order_relaxed);
  slot.outstanding.store(1, std::memory_order_relaxed);
  slot.run->Reset();
  {
    std::lock_guard<std::mutex> lock(slot.error_mutex);
    slot.error = nullptr;
  }
  slot.generation.store(generation, std::memory_order_release);
  slot.done.store(false, std::memory_order_release);
}

void ActorGraph::Kick(Slot& slot) {
  // Wakes sent from here are the driver's messages.
  // Read before the sources go: once they do, the iteration may end and the slot be reused.
  const bool traced = slot.traced;
  if (traced) CurrentTrace() = {trace_, trace_driver_lane_, trace_graph_, slot.iteration, 0};
  for (int source : sources_) {
    const Node& node = nodes_[source];
    if (node.feed_index >= 0 && !withheld_feeds_.empty() &&
        std::find(withheld_feeds_.begin(), withheld_feeds_.end(), feeds_[node.feed_index].name) !=
            withheld_feeds_.end()) {
      continue;
    }
    Dispatch(&slot.tasks[source], nullptr);
  }
  if (traced) CurrentTrace() = {};
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
  const uint32_t traced_wake = stream.TakeWakeId();  // before a new wake can be sent
  stream.ClearWakePending();
  const int64_t received = traced_wake != 0 ? TraceRecorder::Now() : 0;
  Drain(stream);
  if (traced_wake != 0) TraceWakeReceived(stream, traced_wake, received);
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
      // Linger: more work usually follows within microseconds (the rest of the
      // iteration, or the next one of a training loop), and holding the claim
      // saves the producer a wake-up.
      if (shut_down_.load(std::memory_order_relaxed)) break;
      CpuRelax();
      if (++spins % 64 == 0 && Clock::now() - idle_since > strategy_.spin_before_sleep) break;
    }
  } while (stream.ReleaseOrReclaim());
}

void ActorGraph::RunTask(Task* task, Stream& stream) {
  if (task->kind == TaskKind::kChunk) {
    RunChunk(task, stream);
    return;
  }
  if (OnDevice(*task)) {
    LaunchTask(task, stream);
    return;
  }
  Slot& slot = *slots_[task->slot];
  const uint32_t generation = task->countdown.generation();
  if (generation != slot.generation.load(std::memory_order_acquire)) return;  // left by an abort
  Task* tasks = slot.tasks.get();
  // The successors' countdowns are touched right after the kernel: start
  // fetching their lines now, so the kernel's run time hides the misses.
  for (int32_t i = 0; i < task->successor_count && i < 8; ++i) {
    __builtin_prefetch(&tasks[task->successors[i]], 1, 3);
  }
  const bool traced = slot.traced;
  int64_t began = 0;
  if (traced) {
    began = TraceRecorder::Now();
    CurrentTrace() = {trace_, trace_lane(task->node), trace_graph_, slot.iteration, 0};
  }
  bool ran = true;
  if (task->kind == TaskKind::kFeed) {
    const int feed = nodes_[task->node].feed_index;
    if (slot.feed_given[feed]) {
      slot.feed_vars[feed]->mutable_tensor()->ShareDataWith(slot.feed_values[feed]);
    }
  } else if (!slot.cancelled.load(std::memory_order_relaxed)) {
    if (strategy_.dependency_wait == DependencyWait::kStreamSync) {
      WaitForProducerStreams(task->node, stream);
    }
    stream.SetRunning(task->node);
    RunOrFail(slot, task->node, [task] { (*task->kernel)(*task->context); });
    stream.SetRunning(-1);
  } else {
    ran = false;
  }
  stream.CountExecuted();
  if (traced && ran) {
    TraceSpan(TraceEventKind::kKernel, trace_lane(task->node), task->node, stream.index_in_place(),
              began, slot);
  }
  Complete(task, slot, generation, &stream);
  if (traced) CurrentTrace() = {};
}

void ActorGraph::Complete(Task* task, Slot& slot, uint32_t generation, Stream* stream) {
  if (slot.traced) TraceSends(*task, slot);
  if (task->has_releases) Release(task->node, slot);
  if (task->backward) slot.backward_pending.fetch_sub(1, std::memory_order_relaxed);
  task->countdown.Reset(NextGeneration(generation), task->predecessor_count);
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

void ActorGraph::Dispatch(Task* task, Stream* from) {
  if (task->kind == TaskKind::kCollective) {
    Slot& slot = *slots_[task->slot];
    IssueCollective(task, slot, task->countdown.generation());
  } else if (task->kind == TaskKind::kBlock) {
    Slot& slot = *slots_[task->slot];
    StartBlock(task, slot, task->countdown.generation());
  } else if (task->kind == TaskKind::kFiber) {
    Slot& slot = *slots_[task->slot];
    StartFiber(task, slot, task->countdown.generation());
  } else if (task->kind == TaskKind::kActor) {
    StartActorOp(task, *slots_[task->slot]);
  } else if (from != nullptr && task->stream == from->id()) {
    from->PushLocal(task);
  } else {
    streams_[task->stream]->Submit(task);
  }
}

// A block op is handed to its runner; it completes when the runner's places
// have all finished (on whichever thread finishes last).
bool ActorGraph::BeginAsyncOp(Task* task, Slot& slot, uint32_t generation) {
  if (slot.cancelled.load(std::memory_order_relaxed)) {
    Complete(task, slot, generation, nullptr);
    return false;
  }
  blocks_running_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void ActorGraph::EndAsyncOp(Task* task, Slot& slot, uint32_t generation, bool traced, int64_t began,
                            std::exception_ptr error) {
  if (error) RunOrFail(slot, task->node, [&error] { std::rethrow_exception(error); });
  blocks_running_.fetch_sub(1, std::memory_order_acq_rel);
  if (traced) {
    TraceSpan(TraceEventKind::kKernel, trace_lane(task->node), task->node, -1, began, slot);
  }
  Complete(task, slot, generation, nullptr);  // may end the iteration: the slot is not ours after
  if (traced) CurrentTrace() = {};
}

void ActorGraph::StartBlock(Task* task, Slot& slot, uint32_t generation) {
  if (!BeginAsyncOp(task, slot, generation)) return;
  BlockRunner* runner = slot.block_runners[task->node].get();
  const bool traced = slot.traced;
  const int64_t began = traced ? TraceRecorder::Now() : 0;
  runner->Start([this, task, &slot, generation, traced, began](std::exception_ptr error) {
    EndAsyncOp(task, slot, generation, traced, began, error);
  });
}

void ActorGraph::StartActorOp(Task* task, Slot& slot) {
  if (!BeginAsyncOp(task, slot, task->countdown.generation())) return;
  caf::anon_send(op_actors_[task->node], run_op_atom::value, reinterpret_cast<uint64_t>(task));
}

void ActorGraph::RunActorOp(Task* task, OpActor& op) {
  Slot& slot = *slots_[task->slot];
  const uint32_t generation = task->countdown.generation();
  const bool traced = slot.traced;
  const int64_t began = traced ? TraceRecorder::Now() : 0;
  auto called = std::make_shared<std::atomic<bool>>(false);
  OpDone done = [self = shared_from_this(), task, &slot, generation, traced, began,
                 called](std::exception_ptr error) {
    if (called->exchange(true)) return;  // once per run
    self->EndAsyncOp(task, slot, generation, traced, began, error);
  };
  if (traced) CurrentTrace() = {trace_, trace_lane(task->node), trace_graph_, slot.iteration, 0};
  try {
    op.Run(*task->context, done);
  } catch (...) {
    done(std::current_exception());
  }
  if (traced) CurrentTrace() = {};  // done may come later, from elsewhere
}

// Debugging strategy: before a consumer runs, each stream it depends on must
// have gone idle (nothing queued, no kernel running), as a host-side stream
// synchronisation would. Bounded, so two streams waiting on each other go on.
void ActorGraph::WaitForProducerStreams(int node, Stream& self) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(10);
  for (int s : nodes_[node].cross_stream_producers) {
    Stream& producer = *streams_[s];
    if (&producer == &self) continue;
    auto busy = [&] { return producer.HasQueuedWork() || producer.running_node() >= 0; };
    if (!busy()) continue;
    TraceWait wait(WaitKind::kStream,
                   StrCat("stream ", producer.place(), ".", producer.index_in_place()));
    while (busy() && Clock::now() < deadline) CpuRelax();
  }
}

void ActorGraph::Release(int node, Slot& slot) {
  for (int r : nodes_[node].releases) {
    if (slot.release_counts[r].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    slot.release_counts[r].store(releasables_[r].readers, std::memory_order_relaxed);
    if (!slot.keep[r]) slot.release_vars[r]->Clear();
  }
}

void ActorGraph::FailIteration(Slot& slot, int node, const Error& error) {
  const Error located(error.code(), StrCat(DescribeNode(node), ": ", error.message()));
  FailSlot(slot, std::make_exception_ptr(located));
}

void ActorGraph::Finish(Slot& slot) {
  if (!device_streams_.empty()) SynchronizeDevices(slot);
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
        std::vector<Tensor> values;
        for (int p = 0; p < places(); ++p) {
          Variable* v = slot.place_scopes[p]->FindVar(name);
          RILL_CHECK(v != nullptr && v->tensor().initialized(), kNotFound, "fetch \"", name,
                     "\" holds no value after the run",
                     places() > 1 ? StrCat(" on place ", p) : "");
          values.push_back(FetchedToHost(v->tensor(), p, results.size(), slot));
        }
        results.push_back(MergeFetch(MergeFor(name), values, slot.place_weights));
      }
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (slot.traced) TraceIteration(slot);
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    last_stats_.collectives = static_cast<int>(collectives_.size());
    last_stats_.collectives_overlapping_backward = slot.overlapped.load(std::memory_order_relaxed);
    last_stats_.merge_bytes_raw = last_stats_.merge_bytes = 0;
    for (const auto& [raw, merged] : slot.collective_bytes) {
      last_stats_.merge_bytes_raw += raw;
      last_stats_.merge_bytes += merged;
    }
  }
  std::promise<std::vector<Tensor>> promise = std::move(slot.promise);
  DoneFn on_done = std::move(slot.on_done);
  slot.on_done = nullptr;
  for (auto& value : slot.feed_values) value = Tensor();
  std::fill(slot.feed_given.begin(), slot.feed_given.end(), 0);
  std::fill(slot.keep.begin(), slot.keep.end(), 0);
  slot.fetches.clear();
  slot.done.store(true, std::memory_order_release);
  slot.busy.store(false, std::memory_order_release);
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  free_slots_.release();
  if (on_done) {
    on_done(std::move(results), error);
  } else if (error) {
    promise.set_exception(error);
  } else {
    promise.set_value(std::move(results));
  }
}

// Ends an iteration that cannot finish (nothing runs, nothing is queued):
// fails its future and marks the slot for a full reset before reuse.
void ActorGraph::Abort(Slot& slot, const std::string& why) {
  if (slot.aborted.exchange(true)) return;  // waiting for its fibers to end
  {
    std::lock_guard<std::mutex> lock(slot.error_mutex);
    slot.error = std::make_exception_ptr(Error(ErrorCode::kTimeout, why));
  }
  slot.cancelled.store(true, std::memory_order_relaxed);
  slot.dirty = true;
  // Stale arrivals of this generation must not complete it a second time.
  slot.terminal.Reset(0, 0);
  // Fibers parked on channels return; the last part to end finishes the iteration.
  slot.run->CloseAll();
  EndGraphPart(slot);
}

}  // namespace rill
