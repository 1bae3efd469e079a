#include "actors/executor/built_graph.h"

#include <string_view>
#include <unordered_map>

#include "actors/executor/block_runner.h"
#include "rill/device.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "runtime/base/huge_pages.h"

namespace rill {
namespace {

// Estimated bytes of a declared variable, unknown dims counted as `batch`.
int64_t EstimatedBytes(const proto::VarDesc* desc, int64_t batch) {
  if (desc == nullptr) return 0;
  int64_t n = static_cast<int64_t>(SizeOf(FromProto(desc->dtype())));
  for (int64_t d : desc->shape()) n *= d < 0 ? batch : d;
  return n;
}

}  // namespace

BuiltGraph::BuiltGraph(const DataParallelPlan& plan, SsaGraph ssa, VarIndex declared,
                       const std::vector<Place>& places, const ExecutionStrategy& strategy)
    : plan(plan), place_list(places), ssa(std::move(ssa)), declared(std::move(declared)) {
  BuildNodes();
  BuildReleases(strategy);
}

void BuiltGraph::BuildNodes() {
  const proto::BlockDesc& block = plan.program().blocks(plan.block_index);
  const int streams_per_place = ssa.streams_per_place;
  auto stream_of = [&](const OpNode& op) {
    return op.place < 0 ? -1 : op.place * streams_per_place + op.stream;
  };
  nodes.reserve(ssa.ops.size());
  AdviseHugePages(nodes.data(), nodes.capacity() * sizeof(Node));  // before the first touch
  nodes.resize(ssa.ops.size());
  merges.resize(static_cast<size_t>(plan.collectives));
  successor_begin.reserve(ssa.ops.size() + 1);
  successor_list.reserve(static_cast<size_t>(ssa.EdgeCount()));
  std::unordered_map<std::string_view, OpKind> kinds;  // by op type
  for (const OpNode& op : ssa.ops) {
    Node& node = nodes[op.id];
    node.stream = stream_of(op);
    node.predecessor_count = static_cast<uint32_t>(op.predecessors.size());
    successor_begin.push_back(static_cast<int32_t>(successor_list.size()));
    successor_list.insert(successor_list.end(), op.successors.begin(), op.successors.end());
    for (int pred : op.predecessors) {
      const int s = stream_of(ssa.ops[pred]);
      if (s >= 0 && s != node.stream) node.cross_stream_producers.push_back(s);
    }
    if (op.kind == OpNodeKind::kFeed) {
      node.kind = TaskKind::kFeed;
      node.feed_index = static_cast<int>(feeds.size());
      const std::string& name = ssa.vars[op.outputs[0]].name;
      feeds.push_back({name, op.place});
      auto& by_place = feed_index[name];
      by_place.resize(static_cast<size_t>(places()), -1);
      by_place[op.place] = node.feed_index;
      continue;
    }
    if (op.kind == OpNodeKind::kCollective) {
      RILL_CHECK(op.collective >= 0 && op.collective < plan.collectives, kInternal,
                 "collective order ", op.collective, " out of range");
      node.kind = TaskKind::kCollective;
      node.merge = op.collective;
      GradientMerge& merge = merges[op.collective];
      merge.node = op.id;
      merge.order = op.collective;
      merge.reduce = op.type == "reduce";
      merge.members = InputVars(block.ops(op.op_index), "X");
      continue;
    }
    if (op.role == proto::ROLE_BACKWARD) ++backward_nodes;
    SetHowItRuns(op, node, kinds);
  }
  successor_begin.push_back(static_cast<int32_t>(successor_list.size()));
  for (const OpNode& op : ssa.ops) {
    if (op.predecessors.empty()) sources.push_back(op.id);
  }
  sink_count = static_cast<uint32_t>(ssa.Sinks().size());
}

BuiltGraph::OpKind BuiltGraph::KindOf(const std::string& type) {
  OpKind kind;
  kind.schema = &GetOpSchema(type);
  if (BlockRunner::Handles(type)) {
    kind.task = TaskKind::kBlock;
  } else if ((kind.actor = FindOpActor(type))) {
    kind.task = TaskKind::kActor;
  } else {
    kind.task = kind.schema->blocking() ? TaskKind::kFiber : TaskKind::kKernel;
  }
  return kind;
}

void BuiltGraph::SetHowItRuns(const OpNode& op, Node& node,
                              std::unordered_map<std::string_view, OpKind>& kinds) {
  const proto::OpDesc& desc = plan.program().blocks(plan.block_index).ops(op.op_index);
  auto it = kinds.find(desc.type());
  if (it == kinds.end()) it = kinds.emplace(desc.type(), KindOf(desc.type())).first;
  const OpKind& kind = it->second;
  const Place& place = place_list[op.place];
  auto where = [&] {
    return StrCat("block ", plan.block_index, ", op ", op.op_index, " (", desc.type(), ")");
  };
  node.kind = kind.task;
  if (kind.task == TaskKind::kBlock) {
    RILL_CHECK(places() == 1, kUnimplemented, where(), ": a program with ", desc.type(),
               " runs on one place (the op spreads over its own places)");
  } else if (kind.task == TaskKind::kActor) {
    node.actor = kind.actor;
  } else {
    node.kernel = kind.schema->FindKernel(place.kind);
    if (node.kind == TaskKind::kFiber && kind.schema->try_kernel()) {
      node.try_kernel = &kind.schema->try_kernel();
    }
    if (node.kernel == nullptr) {
      Fail(ErrorCode::kUnimplemented, where(), ": no kernel for place ", place.ToString(),
           place.kind == Place::Kind::kCuda && !BuiltWithCuda()
               ? " (this build of Rill has no CUDA)"
               : "");
    }
  }
  // On a device place, ops are launched on device streams: a block, blocking
  // or actor op needs the host.
  RILL_CHECK(!place.is_device() || node.kind == TaskKind::kKernel, kUnimplemented, where(),
             ": cannot run on ", place.ToString(),
             " (a block, blocking or actor op runs on the CPU place)");
}

// A variable can be freed after its last reader when it lives only within an
// iteration: not persistable, first written (never read before that) in the
// block, big enough to matter. Only its final version is freed: earlier
// versions share its buffer and are overwritten in place.
void BuiltGraph::BuildReleases(const ExecutionStrategy& strategy) {
  if (!strategy.release_memory_early) return;
  // By variable (place, name): its final version, and whether it is read before written.
  struct PlacedName {
    int place;
    std::string_view name;
    bool operator==(const PlacedName&) const = default;
  };
  struct PlacedNameHash {
    size_t operator()(const PlacedName& k) const {
      return std::hash<std::string_view>()(k.name) ^ (static_cast<size_t>(k.place + 1) << 1);
    }
  };
  struct Versions {
    int final = -1;  // var node id
    bool read_before_write = false;
  };
  // Only tensor buffers big enough to matter are released: an object (a
  // channel) is shared with go blocks that outlive its last reader here.
  std::vector<uint8_t> candidate(ssa.vars.size(), 0);  // by var node id
  std::unordered_map<PlacedName, Versions, PlacedNameHash> versions;
  for (const VarNode& var : ssa.vars) {
    if (var.control || var.persistable) continue;
    const proto::VarDesc* desc = declared.Find(var.name);
    if (desc != nullptr && desc->kind() != proto::DENSE_TENSOR &&
        desc->kind() != proto::SELECTED_ROWS) {
      continue;
    }
    if (EstimatedBytes(desc, 64) < strategy.release_min_bytes) continue;
    candidate[var.id] = 1;
    Versions& v = versions[{var.place, var.name}];
    if (var.version == 0) v.read_before_write = true;
    if (v.final < 0 || ssa.vars[v.final].version < var.version) v.final = var.id;
  }
  // In variable id order, so that the releasables' order does not depend on hashing.
  for (const VarNode& var : ssa.vars) {
    if (!candidate[var.id] || var.version == 0) continue;
    const Versions& v = versions.at({var.place, var.name});
    if (v.final != var.id || v.read_before_write) continue;
    const int index = static_cast<int>(releasables.size());
    releasable_index[var.name].push_back(index);
    releasables.push_back(
        {var.name, var.place, var.consumers.empty() ? 1 : static_cast<int>(var.consumers.size())});
    if (var.consumers.empty()) {
      nodes[var.producer].releases.push_back(index);
    } else {
      for (int consumer : var.consumers) nodes[consumer].releases.push_back(index);
    }
  }
}

std::string BuiltGraph::Describe(int id) const {
  const OpNode& op = ssa.ops[id];
  if (op.kind == OpNodeKind::kCollective) {
    return StrCat("block ", block_index(), ", op ", op.op_index, " (", op.type, " #", op.collective,
                  " over ", places(), " places)");
  }
  std::string where = StrCat(" on ", place_list[op.place].ToString());
  if (places() > 1) where += StrCat(" place ", op.place);
  where += StrCat(" stream ", op.stream);
  if (op.kind == OpNodeKind::kFeed) {
    return StrCat("feed \"", ssa.vars[op.outputs[0]].name, "\"", where);
  }
  return StrCat("block ", block_index(), ", op ", op.op_index, " (", op.type, ")", where);
}

std::vector<std::string> BuiltGraph::FeedNames() const {
  std::vector<std::string> names;
  for (const Feed& feed : feeds) {
    if (feed.place == 0) names.push_back(feed.name);
  }
  return names;
}

}  // namespace rill
