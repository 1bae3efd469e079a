#include "runtime/graph/ssa_graph.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "runtime/error.h"
#include "runtime/graph/block_access.h"
#include "runtime/graph/op_cost.h"
#include "runtime/graph/stream_assignment.h"
#include "runtime/op_desc.h"
#include "runtime/var_index.h"

namespace rill {
namespace {

// The distinct names of an op's inputs (or outputs), its sub-blocks' outside
// accesses included, in first-seen order. Pointers into the op and `extra`.
std::vector<const std::string*> DistinctNames(
    const google::protobuf::RepeatedPtrField<proto::Slot>& slots,
    const std::set<std::string>& extra) {
  std::vector<const std::string*> names;
  std::unordered_set<std::string_view> seen;  // only for long lists
  auto add = [&](const std::string& name) {
    if (names.size() < 16) {
      for (const std::string* n : names) {
        if (*n == name) return;
      }
      names.push_back(&name);
      if (names.size() == 16) {
        for (const std::string* n : names) seen.insert(*n);
      }
      return;
    }
    if (seen.insert(name).second) names.push_back(&name);
  };
  for (const auto& slot : slots) {
    for (const auto& name : slot.vars()) add(name);
  }
  for (const auto& name : extra) add(name);
  return names;
}

bool Contains(const std::vector<const std::string*>& names, const std::string& name) {
  for (const std::string* n : names) {
    if (*n == name) return true;
  }
  return false;
}

// Builds the replica of one block on one place, appending to the graph.
class ReplicaBuilder {
 public:
  ReplicaBuilder(const proto::ProgramDesc& program, int block_index, const VarIndex& vars,
                 int place, SsaGraph* graph)
      : program_(program), block_index_(block_index), vars_(vars), place_(place), graph_(graph) {}

  void Build() {
    const proto::BlockDesc& block = program_.blocks(block_index_);
    std::vector<BlockAccess> sub_access(static_cast<size_t>(block.ops_size()));
    for (int i = 0; i < block.ops_size(); ++i) {
      for (int sub : SubBlocksOf(block.ops(i))) {
        BlockAccess a = ExternalAccess(program_, sub);
        sub_access[i].reads.insert(a.reads.begin(), a.reads.end());
        sub_access[i].writes.insert(a.writes.begin(), a.writes.end());
      }
    }
    AddFeedNodes(block, sub_access);
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      OpNode& node = NewOp(OpNodeKind::kCompute, i, op.type());
      const int id = node.id;
      const auto reads = DistinctNames(op.inputs(), sub_access[i].reads);
      const auto writes = DistinctNames(op.outputs(), sub_access[i].writes);
      for (const std::string* name : reads) Read(id, *name);
      for (const std::string* name : writes) Write(id, *name, Contains(reads, *name));
    }
  }

 private:
  struct VarState {
    int current = -1;          // var node id of the newest version
    std::vector<int> readers;  // ops that read the newest version
  };

  // A feed node for every non-persistable variable read before the block writes it.
  void AddFeedNodes(const proto::BlockDesc& block, const std::vector<BlockAccess>& sub_access) {
    std::unordered_set<std::string_view> written;
    std::unordered_set<std::string_view> fed;
    written.reserve(static_cast<size_t>(block.vars_size()));
    state_.reserve(static_cast<size_t>(block.vars_size()));
    persistable_.reserve(static_cast<size_t>(block.vars_size()));
    graph_->ops.reserve(graph_->ops.size() + static_cast<size_t>(block.ops_size()));
    graph_->vars.reserve(graph_->vars.size() + static_cast<size_t>(block.vars_size()));
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      for (const std::string* name : DistinctNames(op.inputs(), sub_access[i].reads)) {
        if (written.count(*name) || fed.count(*name) || Persistable(*name)) continue;
        fed.insert(*name);
        OpNode& feed = NewOp(OpNodeKind::kFeed, -1, "feed");
        const int var = NewVar(*name, 0, feed.id, false);
        graph_->ops[feed.id].outputs.push_back(var);
        state_[*name].current = var;
      }
      for (const std::string* name : DistinctNames(op.outputs(), sub_access[i].writes)) {
        written.insert(*name);
      }
    }
  }

  bool Persistable(const std::string& name) {
    auto it = persistable_.find(name);
    if (it != persistable_.end()) return it->second;
    const proto::VarDesc* desc = vars_.Find(name);
    const bool p = desc != nullptr && desc->persistable();
    persistable_.emplace(std::string_view(name), p);
    return p;
  }

  OpNode& NewOp(OpNodeKind kind, int op_index, const std::string& type) {
    OpNode node;
    node.id = static_cast<int>(graph_->ops.size());
    node.kind = kind;
    node.op_index = op_index;
    node.type = type;
    node.place = place_;
    graph_->ops.push_back(std::move(node));
    return graph_->ops.back();
  }

  int NewVar(const std::string& name, int version, int producer, bool control) {
    VarNode var;
    var.id = static_cast<int>(graph_->vars.size());
    var.name = name;
    var.version = version;
    var.place = place_;
    var.producer = producer;
    var.control = control;
    var.persistable = !control && Persistable(name);
    graph_->vars.push_back(std::move(var));
    return graph_->vars.back().id;
  }

  void Read(int op, const std::string& name) {
    VarState& s = state_[name];
    if (s.current < 0) s.current = NewVar(name, 0, -1, false);  // ready at the start
    VarNode& var = graph_->vars[s.current];
    var.consumers.push_back(op);
    graph_->ops[op].inputs.push_back(var.id);
    s.readers.push_back(op);
    if (var.producer >= 0) Depend(op, var.producer);
  }

  void Write(int op, const std::string& name, bool also_read) {
    VarState& s = state_[name];
    int version = 1;
    if (s.current >= 0) {
      const VarNode& old = graph_->vars[s.current];
      version = old.version + 1;
      const int old_producer = old.producer;
      // Write after read: everyone who reads the old version runs first.
      bool other_readers = false;
      for (int reader : s.readers) {
        if (reader == op) continue;
        other_readers = true;
        AddControlEdge(reader, op);
      }
      // Write after write: with no reader in between, order the two writers.
      if (!other_readers && !also_read && old_producer >= 0 && old_producer != op) {
        AddControlEdge(old_producer, op);
      }
    }
    s.current = NewVar(name, version, op, false);
    s.readers.clear();
    graph_->ops[op].outputs.push_back(s.current);
  }

  // A dummy variable from `before` to `after`, unless `after` already waits for `before`.
  void AddControlEdge(int before, int after) {
    if (Depends(after, before)) return;
    const int var = NewVar(StrCat("ctrl#", graph_->vars.size()), 0, before, true);
    graph_->vars[var].consumers.push_back(after);
    graph_->ops[before].outputs.push_back(var);
    graph_->ops[after].inputs.push_back(var);
    Depend(after, before);
  }

  bool Depends(int op, int on) const {
    const auto& preds = graph_->ops[op].predecessors;
    return std::find(preds.begin(), preds.end(), on) != preds.end();
  }

  void Depend(int op, int on) {
    if (op == on || Depends(op, on)) return;
    graph_->ops[op].predecessors.push_back(on);
  }

  const proto::ProgramDesc& program_;
  int block_index_;
  const VarIndex& vars_;
  int place_;
  SsaGraph* graph_;
  // Keyed by views of names in the program, which outlives the builder.
  std::unordered_map<std::string_view, VarState> state_;
  std::unordered_map<std::string_view, bool> persistable_;
};

}  // namespace

std::vector<int> SsaGraph::Sources() const {
  std::vector<int> ids;
  for (const auto& op : ops) {
    if (op.predecessors.empty()) ids.push_back(op.id);
  }
  return ids;
}

std::vector<int> SsaGraph::Sinks() const {
  std::vector<int> ids;
  for (const auto& op : ops) {
    if (op.successors.empty()) ids.push_back(op.id);
  }
  return ids;
}

int64_t SsaGraph::EdgeCount() const {
  int64_t edges = 0;
  for (const auto& op : ops) edges += static_cast<int64_t>(op.predecessors.size());
  return edges;
}

int SsaGraph::ControlEdgeCount() const {
  int count = 0;
  for (const auto& var : vars) count += var.control ? 1 : 0;
  return count;
}

SsaGraph BuildSsaGraph(const proto::ProgramDesc& program, int block_index,
                       const GraphOptions& options) {
  RILL_CHECK(block_index >= 0 && block_index < program.blocks_size(), kOutOfRange, "block ",
             block_index, " does not exist (the program has ", program.blocks_size(), ")");
  RILL_CHECK(!options.places.empty(), kInvalidArgument, "a graph needs at least one place");
  RILL_CHECK(options.streams_per_place >= 1, kInvalidArgument, "streams_per_place is ",
             options.streams_per_place, ", must be >= 1");
  SsaGraph graph;
  graph.places = options.places;
  graph.streams_per_place = options.streams_per_place;
  graph.block_index = block_index;
  const VarIndex vars(program, block_index);
  for (int p = 0; p < static_cast<int>(options.places.size()); ++p) {
    ReplicaBuilder(program, block_index, vars, p, &graph).Build();
  }
  for (auto& op : graph.ops) {
    std::sort(op.predecessors.begin(), op.predecessors.end());
    for (int pred : op.predecessors) graph.ops[pred].successors.push_back(op.id);
  }
  // Successors were appended in increasing op id order: already sorted and unique.
  EstimateOpCosts(program, block_index, vars, options.batch_hint, &graph);
  if (options.assignment == StreamAssignment::kRoundRobin) {
    for (OpNode& op : graph.ops) op.stream = op.id % graph.streams_per_place;
  } else {
    AssignStreams(&graph);
  }
  return graph;
}

}  // namespace rill
