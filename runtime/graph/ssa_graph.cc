#include "runtime/graph/ssa_graph.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "runtime/base/huge_pages.h"
#include "runtime/desc/block_access.h"
#include "runtime/desc/var_index.h"
#include "runtime/graph/data_parallel.h"
#include "runtime/graph/op_cost.h"
#include "runtime/graph/stream_assignment.h"

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

// Builds the graph of a planned block over all its places in one pass. A
// variable is known by (key, name): the key is the place for a place's own
// variables and kShared for the one copy all places share, so hazards on a
// shared variable (a parameter read on every place, written once by its
// owner) order ops across places like any other. Names are numbered once,
// on a first pass that also finds the feeds; the second pass, which adds
// the nodes, looks nothing up by name.
class GraphBuilder {
 public:
  static constexpr int kShared = -1;

  GraphBuilder(const DataParallelPlan& plan, const VarIndex& vars, SsaGraph* graph)
      : plan_(plan),
        block_(plan.program().blocks(plan.block_index)),
        vars_(vars),
        graph_(graph),
        states_(static_cast<size_t>(plan.places) + 1) {}

  void Build() {
    const std::vector<BlockAccess> sub_access = SubBlockAccess();
    static const BlockAccess kNone;
    auto access = [&](int i) -> const BlockAccess& {
      return sub_access.empty() ? kNone : sub_access[static_cast<size_t>(i)];
    };
    NameOps(access);
    // The nodes stay as long as the graph: on huge pages where there are.
    graph_->ops.reserve(static_cast<size_t>(block_.ops_size() * plan_.places));
    AdviseHugePages(graph_->ops.data(), graph_->ops.capacity() * sizeof(OpNode));
    newest_dependent_.reserve(graph_->ops.capacity());
    graph_->vars.reserve(static_cast<size_t>(block_.vars_size() * plan_.places));
    AdviseHugePages(graph_->vars.data(), graph_->vars.capacity() * sizeof(VarNode));
    AddFeedNodes();
    for (int i = 0; i < block_.ops_size(); ++i) {
      const proto::OpDesc& op = block_.ops(i);
      const Names reads = ReadsOf(i);
      const Names writes = WritesOf(i);
      const OpPlacement& placement = plan_.ops[i];
      switch (placement.kind) {
        case OpPlacement::kEveryPlace:
          for (int p = 0; p < plan_.places; ++p)
            AddOp(i, op, p, reads, writes, /*shared_all=*/false);
          break;
        case OpPlacement::kOnePlace:
          AddOp(i, op, placement.place, reads, writes, /*shared_all=*/true);
          break;
        case OpPlacement::kCollective: AddCollective(i, op, reads, writes); break;
      }
    }
  }

 private:
  // A run of name ids: an op's distinct reads or writes.
  struct Names {
    const int* begin_;
    const int* end_;
    const int* begin() const { return begin_; }
    const int* end() const { return end_; }
    bool Contains(int id) const { return std::find(begin_, end_, id) != end_; }
  };
  // One variable name of the block.
  struct Name {
    const std::string* text;  // in the program or the sub-block accesses
    bool persistable = false;
    bool place_state = false;  // persistable, but one copy per place (data_parallel.h)
    bool written = false;      // by an op before the one being looked at (first pass)
    bool fed = false;          // read before written: gets a feed node
  };
  struct VarState {
    int current = -1;          // var node id of the newest version
    std::vector<int> readers;  // ops that read the newest version
  };

  // What each op's sub-blocks read and write of this block's variables (a
  // gradient block also reads its forward block's, which stay inside); empty
  // when no op has a sub-block.
  std::vector<BlockAccess> SubBlockAccess() const {
    std::vector<BlockAccess> sub_access;
    for (int i = 0; i < block_.ops_size(); ++i) {
      const std::set<int> subs = SubBlocksOf(block_.ops(i));
      if (subs.empty()) continue;
      if (sub_access.empty()) sub_access.resize(static_cast<size_t>(block_.ops_size()));
      // The op's own outputs are written before its sub-blocks read them (a
      // select case reads what the select received): not reads of the op.
      std::set<std::string> own_outputs;
      for (const auto& slot : block_.ops(i).outputs())
        own_outputs.insert(slot.vars().begin(), slot.vars().end());
      for (int sub : subs) {
        BlockAccess a = ExternalAccess(plan_.program(), sub);
        for (const auto& name : a.reads) {
          if (vars_.Find(name) != nullptr && !own_outputs.count(name))
            sub_access[i].reads.insert(name);
        }
        for (const auto& name : a.writes) {
          if (vars_.Find(name) != nullptr) sub_access[i].writes.insert(name);
        }
      }
    }
    return sub_access;
  }

  // First pass: numbers every name the ops read or write (their sub-blocks'
  // accesses included), keeps each op's distinct reads and writes, and marks
  // the non-persistable names a place reads before anything writes them
  // there (ops on one place for all read shared variables: never fed).
  template <class Access>
  void NameOps(const Access& access) {
    ids_.reserve(static_cast<size_t>(block_.vars_size()));
    names_.reserve(static_cast<size_t>(block_.vars_size()));
    op_names_.reserve(static_cast<size_t>(block_.ops_size()) * 2 + 1);
    op_names_.push_back(0);
    for (int i = 0; i < block_.ops_size(); ++i) {
      const proto::OpDesc& op = block_.ops(i);
      const bool feeds = plan_.ops[i].kind != OpPlacement::kOnePlace;
      for (const std::string* text : DistinctNames(op.inputs(), access(i).reads)) {
        const int id = Intern(*text);
        name_ids_.push_back(id);
        Name& name = names_[static_cast<size_t>(id)];
        if (feeds && !name.written && !name.fed && !name.persistable) {
          name.fed = true;
          fed_.push_back(id);
        }
      }
      op_names_.push_back(static_cast<int>(name_ids_.size()));
      for (const std::string* text : DistinctNames(op.outputs(), access(i).writes)) {
        const int id = Intern(*text);
        name_ids_.push_back(id);
        if (feeds) names_[static_cast<size_t>(id)].written = true;
      }
      op_names_.push_back(static_cast<int>(name_ids_.size()));
    }
  }

  int Intern(const std::string& text) {
    auto [it, added] = ids_.try_emplace(std::string_view(text), static_cast<int>(names_.size()));
    if (added) {
      const proto::VarDesc* desc = vars_.Find(text);
      names_.push_back({&text, desc != nullptr && desc->persistable(), plan_.IsPlaceState(text)});
    }
    return it->second;
  }

  Names ReadsOf(int op) const {
    const int* ids = name_ids_.data();
    return {ids + op_names_[2 * op], ids + op_names_[2 * op + 1]};
  }
  Names WritesOf(int op) const {
    const int* ids = name_ids_.data();
    return {ids + op_names_[2 * op + 1], ids + op_names_[2 * op + 2]};
  }

  // The key a name resolves to for an op on `place`.
  int KeyFor(int name, int place, bool shared_all) const {
    if (shared_all) return kShared;
    const Name& n = names_[static_cast<size_t>(name)];
    if (plan_.places > 1 && plan_.strategy.reduce == ReduceStrategy::kReduce && n.persistable &&
        !n.place_state) {
      return kShared;
    }
    return place;
  }

  VarState& State(int key, int name) {
    std::vector<VarState>& states = states_[static_cast<size_t>(key + 1)];
    if (states.empty()) states.resize(names_.size());
    return states[static_cast<size_t>(name)];
  }

  void AddOp(int index, const proto::OpDesc& op, int place, Names reads, Names writes,
             bool shared_all) {
    OpNode& node = NewOp(OpNodeKind::kCompute, index, op.type(), place);
    node.role = op.role();
    const int id = node.id;
    for (int name : reads) Read(id, KeyFor(name, place, shared_all), name);
    for (int name : writes) {
      Write(id, KeyFor(name, place, shared_all), name, reads.Contains(name));
    }
    OrderAroundBarriers(id, place, op);
  }

  // Barrier ops (channel ops, go) split their block: the ops since the last
  // barrier run before the next one, which runs before the ops after it.
  void OrderAroundBarriers(int id, int place, const proto::OpDesc& op) {
    Barriers& b = barriers_[place];
    if (op.type() != barrier_type_) {  // ops of one type in a row: one lookup
      const OpSchema* schema = FindOpSchema(op.type());
      barrier_type_ = op.type();
      is_barrier_ = schema != nullptr && schema->barrier();
    }
    if (is_barrier_) {
      if (b.since.empty() && b.last >= 0) AddControlEdge(b.last, id);
      for (int before : b.since) AddControlEdge(before, id);
      b.since.clear();
      b.last = id;
    } else if (b.last >= 0) {
      AddControlEdge(b.last, id);
      b.since.push_back(id);
    } else {
      b.since.push_back(id);
    }
  }

  // One node for all places: reads each place's gradients, writes each
  // place's (allreduce) or the shared copy (reduce).
  void AddCollective(int index, const proto::OpDesc& op, Names reads, Names writes) {
    OpNode& node = NewOp(OpNodeKind::kCollective, index, op.type(), -1);
    node.role = op.role();
    const proto::Attr* order = FindAttr(op, "order");
    node.collective = order != nullptr ? static_cast<int>(order->i()) : 0;
    const int id = node.id;
    const bool reduce = op.type() == "reduce";
    for (int p = 0; p < plan_.places; ++p) {
      for (int name : reads) Read(id, p, name);
    }
    if (reduce) {
      for (int name : writes) Write(id, kShared, name, false);
      return;
    }
    for (int p = 0; p < plan_.places; ++p) {
      for (int name : writes) Write(id, p, name, true);
    }
  }

  // A feed node per place for every variable NameOps found fed.
  void AddFeedNodes() {
    for (int p = 0; p < plan_.places; ++p) {
      for (int name : fed_) {
        OpNode& feed = NewOp(OpNodeKind::kFeed, -1, "feed", p);
        VarState& state = State(p, name);
        state.current = NewVar(name, 0, feed.id, p);
        graph_->ops[feed.id].outputs.push_back(state.current);
      }
    }
  }

  OpNode& NewOp(OpNodeKind kind, int op_index, const std::string& type, int place) {
    OpNode& node = graph_->ops.emplace_back();
    node.id = static_cast<int>(graph_->ops.size()) - 1;
    node.kind = kind;
    node.op_index = op_index;
    node.type = type;
    node.place = place;
    newest_dependent_.push_back(-1);
    return node;
  }

  // A new version of the variable `name`.
  int NewVar(int name, int version, int producer, int place) {
    const Name& n = names_[static_cast<size_t>(name)];
    VarNode& var = NewVarNode(*n.text, version, producer, place);
    var.persistable = n.persistable;
    return var.id;
  }

  VarNode& NewVarNode(const std::string& name, int version, int producer, int place) {
    VarNode& var = graph_->vars.emplace_back();
    var.id = static_cast<int>(graph_->vars.size()) - 1;
    var.name = name;
    var.version = version;
    var.place = place;
    var.producer = producer;
    return var;
  }

  void Read(int op, int key, int name) {
    VarState& s = State(key, name);
    if (s.current < 0) s.current = NewVar(name, 0, -1, key);  // ready at the start
    VarNode& var = graph_->vars[s.current];
    var.consumers.push_back(op);
    graph_->ops[op].inputs.push_back(var.id);
    s.readers.push_back(op);
    if (var.producer >= 0) Depend(op, var.producer);
  }

  void Write(int op, int key, int name, bool also_read) {
    VarState& s = State(key, name);
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
    s.current = NewVar(name, version, op, key);
    s.readers.clear();
    graph_->ops[op].outputs.push_back(s.current);
  }

  // A dummy variable from `before` to `after`, unless `after` already waits for `before`.
  void AddControlEdge(int before, int after) {
    if (Depends(after, before)) return;
    VarNode& dummy =
        NewVarNode(StrCat("ctrl#", graph_->vars.size()), 0, before, graph_->ops[after].place);
    dummy.control = true;
    dummy.consumers.push_back(after);
    graph_->ops[before].outputs.push_back(dummy.id);
    graph_->ops[after].inputs.push_back(dummy.id);
    Depend(after, before);
  }

  // Edges are only ever added to the newest op: `newest_dependent_[on] == op`
  // says that op already waits for `on` without searching a long list (the
  // last op of a fan-in reads thousands).
  bool Depends(int op, int on) const {
    if (op == static_cast<int>(graph_->ops.size()) - 1) return newest_dependent_[on] == op;
    const auto& preds = graph_->ops[op].predecessors;
    return std::find(preds.begin(), preds.end(), on) != preds.end();
  }

  void Depend(int op, int on) {
    if (op == on || Depends(op, on)) return;
    graph_->ops[op].predecessors.push_back(on);
    if (op == static_cast<int>(graph_->ops.size()) - 1) newest_dependent_[on] = op;
  }

  const DataParallelPlan& plan_;
  const proto::BlockDesc& block_;
  const VarIndex& vars_;
  SsaGraph* graph_;
  // Names by id, and ids by views of names in the program (or the sub-block
  // accesses), which outlive the builder.
  std::vector<Name> names_;
  std::unordered_map<std::string_view, int> ids_;
  std::vector<int> fed_;  // name ids, in the order first read
  // Each op's distinct reads then writes: op i's reads are name_ids_ from
  // op_names_[2i] to op_names_[2i + 1], its writes from there to op_names_[2i + 2].
  std::vector<int> name_ids_;
  std::vector<int> op_names_;
  // Per key (kShared first, then each place), by name id; sized on first use.
  std::vector<std::vector<VarState>> states_;
  std::vector<int> newest_dependent_;  // by op id: the newest op that waits for it, or -1
  struct Barriers {
    int last = -1;           // the newest barrier op
    std::vector<int> since;  // ops added after it
  };
  std::unordered_map<int, Barriers> barriers_;  // by place
  std::string barrier_type_;                    // the last op type looked up, and
  bool is_barrier_ = false;                     // whether it is a barrier op
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
  return BuildSsaGraph(PlanDataParallel(program, block_index,
                                        static_cast<int>(options.places.size()), options.build),
                       options);
}

SsaGraph BuildSsaGraph(const DataParallelPlan& plan, const GraphOptions& options) {
  return BuildSsaGraph(plan, options, VarIndex(plan.program(), plan.block_index));
}

SsaGraph BuildSsaGraph(const DataParallelPlan& plan, const GraphOptions& options,
                       const VarIndex& vars) {
  RILL_CHECK(static_cast<int>(options.places.size()) == plan.places, kInvalidArgument,
             "the plan is for ", plan.places, " places, the options name ", options.places.size());
  RILL_CHECK(options.streams_per_place >= 1, kInvalidArgument, "streams_per_place is ",
             options.streams_per_place, ", must be >= 1");
  SsaGraph graph;
  graph.places = options.places;
  graph.streams_per_place = options.streams_per_place;
  graph.block_index = plan.block_index;
  GraphBuilder(plan, vars, &graph).Build();
  for (auto& op : graph.ops) {
    std::sort(op.predecessors.begin(), op.predecessors.end());
    for (int pred : op.predecessors) graph.ops[pred].successors.push_back(op.id);
  }
  // Successors were appended in increasing op id order: already sorted and unique.
  if (options.assignment == StreamAssignment::kRoundRobin) {
    for (OpNode& op : graph.ops) op.stream = op.place < 0 ? 0 : op.id % graph.streams_per_place;
  } else if (graph.streams_per_place == 1) {
    for (OpNode& op : graph.ops) op.stream = 0;  // nothing to balance: no costs needed
  } else {
    EstimateOpCosts(plan.program(), plan.block_index, vars, options.batch_hint, &graph);
    AssignStreams(&graph);
  }
  return graph;
}

}  // namespace rill
