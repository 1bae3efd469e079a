#include "actors/executor/feed_rule.h"

#include "rill/executor.h"
#include "runtime/core/place_io.h"

namespace rill {
namespace {

bool SplitsAlongBatch(const proto::VarDesc& desc) {
  return desc.shape_size() >= 1 && desc.shape(0) == -1;
}

bool Given(const FeedList& feeds, const std::string& name) {
  for (const auto& feed : feeds) {
    if (feed.first == name) return true;
  }
  return false;
}

}  // namespace

FeedRule::FeedRule(const BuiltGraph& graph, const Scope& scope, int slots)
    : graph_(graph), scope_(scope), slots_(slots) {}

void FeedRule::Check(const FeedList& feeds, const std::vector<std::string>& fetches) const {
  const int block = graph_.block_index();
  int64_t batch = -1;
  std::string batch_feed;
  for (const auto& [name, tensor] : feeds) {
    const proto::VarDesc* desc = graph_.declared.Find(name);
    CheckFeed(desc, name, tensor, block);
    RILL_CHECK(!desc->persistable() || slots_ == 1, kInvalidArgument, "feed \"", name,
               "\" is persistable, and the ", slots_,
               " iterations this executor runs at once share it: set it in the scope between "
               "runs, or run one iteration at a time (max_iterations_in_flight 1)");
    if (graph_.places() == 1 || !SplitsAlongBatch(*desc)) continue;
    if (batch < 0) {
      batch = tensor.dim(0);
      batch_feed = name;
    }
    RILL_CHECK(tensor.dim(0) == batch, kInvalidArgument,
               "feeds split over the places must have as many rows: \"", batch_feed, "\" has ",
               batch, ", \"", name, "\" has ", tensor.dim(0));
  }
  for (const auto& name : fetches) {
    RILL_CHECK(graph_.declared.Find(name) != nullptr, kNotFound, "fetch \"", name,
               "\" is not a variable of block ", block);
  }
}

FeedList FeedRule::Complete(const FeedList& feeds) const {
  FeedList all = feeds;
  for (const BuiltGraph::Feed& feed : graph_.feeds) {
    if (feed.place != 0 || feed.name == graph_.plan.loss_scale || Given(feeds, feed.name)) {
      continue;
    }
    const Variable* held = scope_.FindVar(feed.name);
    if (held != nullptr && held->tensor().initialized()) {
      all.emplace_back(feed.name, held->tensor());
      continue;
    }
    // The first op that reads it, for the message.
    const OpNode* reader = nullptr;
    for (const OpNode& op : graph_.ssa.ops) {
      if (op.kind != OpNodeKind::kFeed || graph_.ssa.vars[op.outputs[0]].name != feed.name)
        continue;
      const VarNode& var = graph_.ssa.vars[op.outputs[0]];
      if (!var.consumers.empty()) reader = &graph_.ssa.ops[var.consumers[0]];
      break;
    }
    FailMissingFeed(graph_.block_index(), reader ? reader->op_index : -1,
                    reader ? reader->type : "?", feed.name);
  }
  return all;
}

void FeedRule::BindUnread(IterationSlot& slot, const FeedList& feeds) const {
  const int n = graph_.places();
  for (const auto& [name, tensor] : feeds) {
    if (graph_.feed_index.count(name) || name == graph_.plan.loss_scale) continue;
    // Each place's variable of that name: its own copy, or the one they share.
    std::vector<Variable*> vars;
    bool shared = true;
    for (int p = 0; p < n; ++p) {
      vars.push_back(slot.ScopeOf(p)->FindVar(name));
      shared &= vars.back() == vars.front();
    }
    const bool split =
        !shared && !slot.feed_rows.empty() && SplitsAlongBatch(*graph_.declared.Find(name));
    const std::vector<Tensor> slices =
        split ? SplitBatch(tensor, slot.feed_rows) : std::vector<Tensor>{};
    for (int p = 0; p < n; ++p) {
      vars[p]->mutable_tensor()->ShareDataWith(split ? slices[p] : tensor);
      if (shared) break;
    }
  }
}

}  // namespace rill
