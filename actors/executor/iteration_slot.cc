#include "actors/executor/iteration_slot.h"

#include <algorithm>

#include "actors/executor/actor_graph.h"
#include "actors/executor/block_runner.h"
#include "rill/executor.h"
#include "rill/op_registry.h"
#include "runtime/base/huge_pages.h"
#include "runtime/core/place_io.h"

namespace rill {
namespace {

// Place 0 draws the reference executor's random numbers; the others their own.
uint64_t PlaceSeed(uint64_t seed, int place) {
  if (place == 0) return seed;
  uint64_t x = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(place);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 31);
}

bool SplitsAlongBatch(const proto::VarDesc& desc) {
  return desc.shape_size() >= 1 && desc.shape(0) == -1;
}

}  // namespace

// -- IterationRun ----------------------------------------------------------------

void IterationRun::Go(std::string what, std::function<void()> body) {
  graph_->StartGo(*slot_, std::move(what), std::move(body));
}

void IterationRun::OnFailure(std::function<void()> closer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) {
      closers_.push_back(std::move(closer));
      return;
    }
  }
  closer();
}

void IterationRun::Progress() { graph_->CountProgress(); }

void IterationRun::CloseAll() {
  std::vector<std::function<void()>> closers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    closers.swap(closers_);
  }
  for (auto& close : closers) close();
}

void IterationRun::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = false;
  closers_.clear();
}

// -- building ----------------------------------------------------------------------

IterationSlot::IterationSlot(int index) : index(index) {}
IterationSlot::~IterationSlot() = default;

void IterationSlot::MakeScopes(const DataParallelPlan& plan, Scope* scope, bool private_scope,
                               ReduceStrategy reduce_strategy, ActorGraph* graph) {
  const proto::BlockDesc& block = plan.program().blocks(plan.block_index);
  const int n = plan.places;
  run = std::make_unique<IterationRun>(plan.program(), graph, this);
  for (const auto& var : block.vars()) {
    // Var alone where no ancestor could hold it: one lookup fewer.
    if (scope->parent() == nullptr || scope->FindVar(var.name()) == nullptr) scope->Var(var.name());
  }
  base = scope;
  if (private_scope) {
    own_base = std::make_unique<Scope>(scope);
    for (const auto& var : block.vars()) {
      if (!var.persistable()) own_base->Var(var.name());
    }
    base = own_base.get();
  }
  const bool reduce = n > 1 && reduce_strategy == ReduceStrategy::kReduce;
  for (int p = 0; p < n; ++p) {
    if (n == 1 || (!reduce && p == 0)) {
      place_scopes.push_back(base);
      continue;
    }
    auto child = std::make_unique<Scope>(base);
    for (const auto& var : block.vars()) {
      if (var.kind() == proto::READER) continue;  // one reader, shared by the places
      if (!var.persistable()) {
        child->Var(var.name());
      } else if (!reduce || (p > 0 && plan.IsPlaceState(var.name()))) {
        // A place's own copy of a parameter (allreduce) or of per-place state
        // (both strategies; place 0's is the scope's), filled from the scope.
        parameter_copies.push_back({child->Var(var.name()), base->FindVar(var.name()), p});
      }
    }
    place_scopes.push_back(child.get());
    own_place_scopes.push_back(std::move(child));
  }
}

void IterationSlot::MakeContexts(const DataParallelPlan& plan, const std::vector<Place>& places) {
  const proto::BlockDesc& block = plan.program().blocks(plan.block_index);
  const int n = static_cast<int>(places.size());
  const int ops = block.ops_size();
  // Where op i runs on place p: its scope, or null when it does not run there.
  auto scope_of = [&](int p, int i) -> Scope* {
    const OpPlacement& placement = plan.ops[i];
    if (placement.kind == OpPlacement::kEveryPlace) return place_scopes[p];
    if (placement.kind == OpPlacement::kOnePlace && placement.place == p) return base;
    return nullptr;
  };
  size_t count = 0;
  for (int p = 0; p < n; ++p) {
    for (int i = 0; i < ops; ++i) count += scope_of(p, i) != nullptr ? 1 : 0;
  }
  // Reserved: the contexts never move, and lie in op order in one block.
  context_storage.reserve(count);
  AdviseHugePages(context_storage.data(), count * sizeof(KernelContext));
  contexts.assign(static_cast<size_t>(n * ops), nullptr);
  const std::string* last_type = nullptr;  // ops of one type in a row look their schema up once
  const OpSchema* schema = nullptr;
  for (int p = 0; p < n; ++p) {
    for (int i = 0; i < ops; ++i) {
      Scope* op_scope = scope_of(p, i);
      if (op_scope == nullptr) continue;
      const proto::OpDesc& desc = block.ops(i);
      if (last_type == nullptr || *last_type != desc.type()) {
        schema = &GetOpSchema(desc.type());
        last_type = &desc.type();
      }
      KernelContext& context =
          context_storage.emplace_back(desc, *schema, op_scope, places[p],
                                       PlaceSeed(OpSeed(plan.program(), plan.block_index, i), p));
      context.set_run(run.get());
      context.set_place_index(p);
      contexts[static_cast<size_t>(p * ops + i)] = &context;
    }
  }
}

void IterationSlot::BuildTasks(const BuiltGraph& graph) {
  const int n = graph.places();
  const int ops = graph.op_count();
  tasks.reset(new Task[graph.nodes.size()]);
  for (const OpNode& op : graph.ssa.ops) {
    const BuiltGraph::Node& node = graph.nodes[op.id];
    Task& task = tasks[op.id];
    task.node = op.id;
    task.slot = static_cast<int16_t>(index);
    task.stream = static_cast<int16_t>(node.stream);
    task.predecessor_count = node.predecessor_count;
    task.successors = graph.successor_list.data() + graph.successor_begin[op.id];
    task.successor_count = graph.successor_count(op.id);
    task.sink = task.successor_count == 0;
    task.has_releases = !node.releases.empty();
    task.kernel = node.kernel;
    task.kind = node.kind;
    task.backward = op.kind == OpNodeKind::kCompute && op.role == proto::ROLE_BACKWARD;
    task.countdown.Reset(1, node.predecessor_count);
    if (op.kind == OpNodeKind::kCompute) {
      const OpPlacement& placement = graph.plan.ops[op.op_index];
      const int p = placement.kind == OpPlacement::kOnePlace ? placement.place : op.place;
      task.context = contexts[static_cast<size_t>(p * ops + op.op_index)];
    }
  }
  const size_t merge_count = graph.merges.size();
  chunks.reset(new Task[merge_count * static_cast<size_t>(n)]);
  merges = std::vector<MergeState>(merge_count);
  for (size_t c = 0; c < merge_count; ++c) {
    const GradientMerge& merge = graph.merges[c];
    MergeState& state = merges[c];
    state.chunks = &chunks[c * static_cast<size_t>(n)];
    for (int p = 0; p < n; ++p) {
      Task& chunk = state.chunks[p];
      chunk.kind = TaskKind::kChunk;
      chunk.node = merge.node;
      chunk.slot = static_cast<int16_t>(index);
      chunk.place = static_cast<int16_t>(p);
      chunk.stream = static_cast<int16_t>(p * graph.ssa.streams_per_place);
    }
    state.sparse.assign(merge.members.size(), 0);
    state.compressed.assign(merge.members.size(), 0);
    for (const std::string& member : merge.members) {
      for (int p = 0; p < n; ++p) state.vars.push_back(place_scopes[p]->FindVar(member));
      state.vars.push_back(base->FindVar(member));
    }
  }
  for (int p = 0; p < n; ++p) orders.push_back(std::make_unique<MergeOrder>(merge_count));
  terminal.Reset(1, graph.sink_count);
  release_counts.reset(new std::atomic<int32_t>[graph.releasables.size()]);
  for (size_t r = 0; r < graph.releasables.size(); ++r) {
    release_counts[r].store(graph.releasables[r].readers, std::memory_order_relaxed);
    release_vars.push_back(ScopeOf(graph.releasables[r].place)->Var(graph.releasables[r].name));
  }
  keep.assign(graph.releasables.size(), 0);
  feed_values.resize(graph.feeds.size());
  feed_given.assign(graph.feeds.size(), 0);
  for (const BuiltGraph::Feed& feed : graph.feeds) {
    feed_vars.push_back(ScopeOf(feed.place)->Var(feed.name));
  }
  place_weights.assign(static_cast<size_t>(n), 1.0 / n);
}

// -- an iteration --------------------------------------------------------------------

void IterationSlot::Reset(const BuiltGraph& graph) {
  const uint32_t next = NextGeneration(generation.load(std::memory_order_relaxed));
  if (dirty) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      tasks[i].countdown.Reset(next, graph.nodes[i].predecessor_count);
    }
    for (size_t r = 0; r < graph.releasables.size(); ++r) {
      release_counts[r].store(graph.releasables[r].readers, std::memory_order_relaxed);
    }
    dirty = false;
  }
  terminal.Reset(next, graph.sink_count);
  for (auto& order : orders) order->Reset();
  backward_pending.store(graph.backward_nodes, std::memory_order_relaxed);
  overlapped.store(0, std::memory_order_relaxed);
  for (MergeState& state : merges) state.raw_bytes = state.merged_bytes = 0;
  cancelled.store(false, std::memory_order_relaxed);
  aborted.store(false, std::memory_order_relaxed);
  graph_ended.store(false, std::memory_order_relaxed);
  outstanding.store(1, std::memory_order_relaxed);
  run->Reset();
  {
    std::lock_guard<std::mutex> lock(error_mutex);
    error = nullptr;
  }
  generation.store(next, std::memory_order_release);
  done.store(false, std::memory_order_release);
}

void IterationSlot::BindFeeds(const BuiltGraph& graph, const FeedList& feeds) {
  const int n = graph.places();
  std::vector<int64_t> rows;
  for (const auto& [name, tensor] : feeds) {
    const proto::VarDesc* desc = graph.declared.Find(name);
    if (n > 1 && desc != nullptr && SplitsAlongBatch(*desc)) {
      rows = SplitRows(tensor.dim(0), n);
      break;
    }
  }
  feed_rows = rows;
  int64_t batch = 0;
  for (int64_t r : rows) batch += r;
  for (int p = 0; p < n; ++p) {
    place_weights[p] = rows.empty() || batch == 0
                           ? 1.0 / n
                           : static_cast<double>(rows[p]) / static_cast<double>(batch);
  }
  for (const auto& [name, tensor] : feeds) {
    auto it = graph.feed_index.find(name);
    if (it == graph.feed_index.end()) continue;
    const bool split = !rows.empty() && SplitsAlongBatch(*graph.declared.Find(name));
    const std::vector<Tensor> slices = split ? SplitBatch(tensor, rows) : std::vector<Tensor>{};
    for (int p = 0; p < n; ++p) {
      const int feed = it->second[p];
      if (feed < 0) continue;
      feed_values[feed] = split ? slices[p] : tensor;
      feed_given[feed] = 1;
    }
  }
  const std::string& loss_scale = graph.plan.loss_scale;
  if (loss_scale.empty()) return;
  const DataType dtype = FromProto(graph.declared.Find(loss_scale)->dtype());
  const auto& indices = graph.feed_index.at(loss_scale);
  for (int p = 0; p < n; ++p) {
    Tensor scale(dtype, {1});
    scale.Fill(place_weights[p]);
    feed_values[indices[p]] = scale;
    feed_given[indices[p]] = 1;
  }
}

void IterationSlot::KeepFetched(const BuiltGraph& graph, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    auto it = graph.releasable_index.find(name);
    if (it == graph.releasable_index.end()) continue;
    for (int r : it->second) keep[r] = 1;
  }
}

void IterationSlot::Release(const BuiltGraph& graph, int node) {
  for (int r : graph.nodes[node].releases) {
    if (release_counts[r].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    release_counts[r].store(graph.releasables[r].readers, std::memory_order_relaxed);
    if (!keep[r]) release_vars[r]->Clear();
  }
}

void IterationSlot::Fail(std::exception_ptr failure) {
  {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = failure;
    cancelled.store(true, std::memory_order_relaxed);
  }
  run->CloseAll();
}

std::exception_ptr IterationSlot::error_value() {
  std::lock_guard<std::mutex> lock(error_mutex);
  return error;
}

void IterationSlot::Clear() {
  for (auto& value : feed_values) value = Tensor();
  std::fill(feed_given.begin(), feed_given.end(), 0);
  std::fill(keep.begin(), keep.end(), 0);
  fetches.clear();
}

}  // namespace rill
