#include "actors/executor/block_runner.h"

#include <algorithm>
#include <set>

#include "actors/executor/actor_graph.h"
#include "rill/op_desc.h"
#include "runtime/core/place_io.h"
#include "runtime/desc/block_access.h"
#include "runtime/device/blas_threads.h"

namespace rill {
namespace {

// "w@GRAD@RENAME@3" (an accumulated gradient's extra writer) -> "w@GRAD".
std::string WithoutRename(const std::string& name) {
  const size_t at = name.find("@RENAME@");
  return at == std::string::npos ? name : name.substr(0, at);
}

bool IsGrad(const proto::OpDesc& op) { return op.type() == "parallel_do_grad"; }

std::vector<std::string> SplitVars(const proto::OpDesc& op) {
  return InputVars(op, IsGrad(op) ? "Outputs@GRAD" : "Inputs");
}

}  // namespace

bool BlockRunner::Handles(const std::string& type) {
  return type == "parallel_do" || type == "parallel_do_grad";
}

std::vector<std::string> BlockRunner::PlaceLocalVars(const proto::ProgramDesc& program,
                                                     const proto::OpDesc& op) {
  const int block = BlockAttr(op, "sub_block");
  std::set<std::string> names;
  for (const auto& var : program.blocks(block).vars()) names.insert(var.name());
  const BlockAccess access = ExternalAccess(program, block);
  names.insert(access.writes.begin(), access.writes.end());
  for (const auto& name : SplitVars(op)) names.insert(name);
  if (IsGrad(op)) {
    // The forward inputs were split into the places by the forward op.
    for (const auto& name : InputVars(op, "Inputs")) names.insert(name);
  }
  return {names.begin(), names.end()};
}

BlockRunner::BlockRunner(Runtime* runtime, const proto::ProgramDesc& program,
                         const proto::OpDesc& op, Scope* outer,
                         const std::vector<Scope*>& place_scopes,
                         std::shared_ptr<TraceRecorder> trace, int trace_lane)
    : places_(static_cast<int>(place_scopes.size())),
      outer_(outer),
      place_scopes_(place_scopes),
      split_(SplitVars(op)) {
  RILL_CHECK(places_ >= 1, kInvalidArgument, op.type(), " needs at least one place");
  if (IsGrad(op)) {
    for (const auto& g : OutputVars(op, "Inputs@GRAD"))
      merges_.push_back({g, WithoutRename(g), false});
    for (const auto& g : OutputVars(op, "Params@GRAD"))
      merges_.push_back({g, WithoutRename(g), true});
  } else {
    for (const auto& o : OutputVars(op, "Outputs")) merges_.push_back({o, o, false});
  }
  const std::vector<std::string> local = PlaceLocalVars(program, op);
  for (Scope* scope : place_scopes_) {
    for (const auto& name : local) scope->Var(name);
  }
  // Each place's graph: one thread's worth of streams; the enclosing graph's
  // watchdog looks after the whole op; forward values stay for the gradient.
  ExecutionStrategy strategy;
  strategy.num_threads = 1;
  strategy.watchdog_timeout = std::chrono::milliseconds(0);
  strategy.release_memory_early = false;
  strategy.blas_threads = BlasThreads();
  strategy.trace = std::move(trace);
  done_ns_.assign(static_cast<size_t>(places_), 0);
  const int block = BlockAttr(op, "sub_block");
  for (int p = 0; p < places_; ++p) {
    strategy.trace_parent = {trace_lane, p};
    graphs_.push_back(ActorGraph::Spawn(runtime, program, block, {Place::Cpu()}, place_scopes_[p],
                                        strategy, BuildStrategy{}));
    feed_names_.push_back(graphs_.back()->FeedNames());
  }
}

BlockRunner::~BlockRunner() { Shutdown(); }

void BlockRunner::Shutdown() {
  for (auto& graph : graphs_) graph->Shutdown();
}

void BlockRunner::Start(std::function<void(std::exception_ptr)> done) {
  done_ = std::move(done);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = nullptr;
  }
  pending_.store(places_, std::memory_order_release);
  // The first split variable decides the rows each place gets.
  std::vector<int64_t> rows;
  for (const auto& name : split_) {
    const Variable* v = outer_->FindVar(name);
    if (v != nullptr && v->tensor().initialized() && v->tensor().rank() >= 1) {
      rows = SplitRows(v->tensor().dim(0), places_);
      break;
    }
  }
  for (int p = 0; p < places_; ++p) {
    try {
      FeedList feeds;
      for (const auto& name : feed_names_[p]) {
        const bool split = std::find(split_.begin(), split_.end(), name) != split_.end();
        const Variable* local = place_scopes_[p]->FindLocalVar(name);
        const Variable* value = split || local == nullptr || !local->tensor().initialized()
                                    ? outer_->FindVar(name)
                                    : local;
        RILL_CHECK(value != nullptr && value->tensor().initialized(), kInvalidArgument,
                   "the block reads \"", name, "\", which holds no value");
        if (split && !rows.empty()) {
          feeds.emplace_back(name, SplitBatch(value->tensor(), rows)[static_cast<size_t>(p)]);
        } else {
          feeds.emplace_back(name, value->tensor());
        }
      }
      graphs_[p]->RunAsync(feeds, {}, [this, p](std::vector<Tensor>, std::exception_ptr error) {
        PlaceDone(p, error);
      });
    } catch (...) {
      PlaceDone(p, std::current_exception());
    }
  }
}

void BlockRunner::PlaceDone(int place, std::exception_ptr error) {
  if (graphs_[static_cast<size_t>(place)]->traced()) {
    done_ns_[static_cast<size_t>(place)] = TraceRecorder::Now();
  }
  if (error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = error;
  }
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Each place waited from its end to the last place's.
  for (int p = 0; p < places_; ++p) {
    if (done_ns_[static_cast<size_t>(p)] == 0) continue;
    graphs_[static_cast<size_t>(p)]->TraceDriverWait(WaitKind::kParallelBlock, "the other places",
                                                     done_ns_[static_cast<size_t>(p)]);
    done_ns_[static_cast<size_t>(p)] = 0;
  }
  std::exception_ptr result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    result = error_;
  }
  if (!result) {
    try {
      MergeOutputs();
    } catch (...) {
      result = std::current_exception();
    }
  }
  auto done = std::move(done_);
  done(result);
}

void BlockRunner::MergeOutputs() {
  for (const Merge& m : merges_) {
    std::vector<Variable*> locals;
    for (Scope* scope : place_scopes_) {
      Variable* v = scope->FindLocalVar(m.local);
      RILL_CHECK(v != nullptr && (v->tensor().initialized() || v->holds_selected_rows()),
                 kInvalidArgument, "a place produced no \"", m.local, "\"");
      locals.push_back(v);
    }
    Variable* out = outer_->Var(m.outer);
    if (locals[0]->holds_selected_rows()) {
      std::vector<const SelectedRows*> parts;
      for (Variable* v : locals) parts.push_back(&v->selected_rows());
      *out->mutable_selected_rows() = MergeSelectedRows(parts);
      continue;
    }
    std::vector<Tensor> values;
    for (Variable* v : locals) values.push_back(v->tensor());
    if (!m.sum) {
      out->mutable_tensor()->ShareDataWith(MergeFetch(FetchMerge::kConcat, values, {}));
      continue;
    }
    Tensor sum = values[0].Clone();  // the places' gradients added in place order
    VisitFloatType(sum.dtype(), [&]<class T>() {
      T* s = sum.mutable_data<T>();
      for (size_t q = 1; q < values.size(); ++q) {
        RILL_CHECK(values[q].shape() == sum.shape(), kInvalidArgument, "places produced \"",
                   m.local, "\" of different shapes");
        const T* g = values[q].data<T>();
        for (int64_t i = 0; i < sum.numel(); ++i) s[i] += g[i];
      }
    });
    out->mutable_tensor()->ShareDataWith(sum);
  }
}

}  // namespace rill
