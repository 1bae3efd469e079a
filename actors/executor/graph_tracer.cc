#include "actors/executor/graph_tracer.h"

#include <algorithm>

namespace rill {
namespace {

const char* RoleName(proto::OpRole role) {
  switch (role) {
    case proto::ROLE_FORWARD: return "forward";
    case proto::ROLE_BACKWARD:
    case proto::ROLE_LOSS_GRAD: return "backward";
    case proto::ROLE_OPTIMIZE: return "optimize";
    default: return "other";
  }
}

const char* NodeKindName(OpNodeKind kind) {
  switch (kind) {
    case OpNodeKind::kFeed: return "feed";
    case OpNodeKind::kCollective: return "collective";
    default: return "compute";
  }
}

int64_t PayloadBytes(const Variable* var) {
  if (var == nullptr) return 0;
  if (var->holds_selected_rows()) return static_cast<int64_t>(var->selected_rows().value.bytes());
  return var->tensor().initialized() ? static_cast<int64_t>(var->tensor().bytes()) : 0;
}

}  // namespace

GraphTracer::GraphTracer(const BuiltGraph& graph,
                         const std::vector<std::unique_ptr<Stream>>& streams,
                         const ExecutionStrategy& strategy)
    : graph_built_(graph), parent_(strategy.trace_parent) {
  if (!strategy.trace) return;
  trace_ = strategy.trace.get();
  const bool nested = parent_.lane > 0;
  auto place_of = [&](int place) { return nested ? parent_.place : place; };
  // pid 1: the executor; place p: p + 2 (Perfetto treats pid 0 as the kernel's idle process).
  auto pid_of = [&](int place) { return place_of(place) < 0 ? 1 : place_of(place) + 2; };

  TraceGraph tg;
  tg.block = graph.block_index();
  tg.parent_lane = nested ? parent_.lane : -1;
  tg.places = graph.places();
  tg.streams_per_place = graph.ssa.streams_per_place;
  graph_ = trace_->AddGraph(tg);
  RILL_CHECK(graph_ < 65536, kInvalidArgument, "trace: too many graphs in one recorder");
  // Lanes of graphs after the first say which graph they belong to.
  const std::string prefix = nested       ? StrCat("block ", graph.block_index(), ": ")
                             : graph_ > 0 ? StrCat("graph ", graph_, ": ")
                                          : std::string();
  trace_->SetProcessName(1, "executor");
  for (int p = 0; p < graph.places(); ++p) {
    trace_->SetProcessName(pid_of(p),
                           StrCat("place ", p, " (", graph.place_list[p].ToString(), ")"));
  }
  tg.driver_lane = driver_lane_ =
      trace_->AddLane({pid_of(nested ? 0 : -1), "driver", prefix + "driver", graph_, -1,
                       nested ? place_of(0) : -1});
  RegisterNodes(tg, prefix);
  for (const auto& stream : streams) {
    const int lane = trace_->AddLane(
        {pid_of(stream->place()), "stream",
         prefix + StrCat("stream ", place_of(stream->place()), ".", stream->index_in_place()),
         graph_, -1, place_of(stream->place())});
    stream->set_trace(trace_, lane);
  }
  RegisterEdges(tg);
  trace_->UpdateGraph(graph_, std::move(tg));
}

void GraphTracer::RegisterNodes(TraceGraph& tg, const std::string& prefix) {
  const BuiltGraph& graph = graph_built_;
  const bool nested = parent_.lane > 0;
  auto place_of = [&](int place) { return nested ? parent_.place : place; };
  auto add_lane = [&](int place, const char* kind, std::string name, int node) {
    const int pid = place_of(place) < 0 ? 1 : place_of(place) + 2;
    return trace_->AddLane(
        {pid, kind, prefix + name, graph_, node, place < 0 ? -1 : place_of(place)});
  };
  const int n = graph.places();
  lanes_.assign(graph.ssa.ops.size(), 0);
  chunk_lanes_.assign(graph.merges.size() * static_cast<size_t>(n), 0);
  for (const OpNode& op : graph.ssa.ops) {
    TraceGraph::Node node;
    node.id = op.id;
    node.type = op.type;
    node.op = op.op_index;
    node.place = op.place < 0 ? -1 : place_of(op.place);
    node.stream = op.place < 0 ? -1 : op.stream;
    node.kind = NodeKindName(op.kind);
    node.role = op.kind == OpNodeKind::kCompute ? RoleName(op.role) : "other";
    if (op.kind == OpNodeKind::kCollective) {
      node.collective = op.collective;
      node.lane = add_lane(-1, "collective", StrCat(op.type, " ", op.collective), op.id);
      for (int p = 0; p < n; ++p) {
        const int lane =
            add_lane(p, "chunk", StrCat(op.type, " ", op.collective, " @ place ", p), op.id);
        chunk_lanes_[static_cast<size_t>(op.collective * n + p)] = lane;
        node.chunk_lanes.push_back(lane);
      }
    } else {
      node.lane = add_lane(op.place, "op", StrCat("op ", op.id, " ", op.type), op.id);
    }
    lanes_[static_cast<size_t>(op.id)] = node.lane;
    tg.nodes.push_back(std::move(node));
  }
}

// Each edge's variable: the producer's output its consumer reads (a data
// edge), else a control dummy.
void GraphTracer::RegisterEdges(TraceGraph& tg) {
  const BuiltGraph& graph = graph_built_;
  const size_t edges = graph.successor_list.size();
  edge_detail_.assign(edges, -1);
  edge_control_.assign(edges, 1);
  edge_var_.assign(edges, -1);
  for (const OpNode& op : graph.ssa.ops) {
    for (int32_t e = graph.successor_begin[op.id]; e < graph.successor_begin[op.id + 1]; ++e) {
      const int to = graph.successor_list[static_cast<size_t>(e)];
      for (int out : op.outputs) {
        const VarNode& var = graph.ssa.vars[out];
        if (std::find(var.consumers.begin(), var.consumers.end(), to) == var.consumers.end()) {
          continue;
        }
        if (edge_var_[e] < 0 || (!var.control && edge_control_[e])) {
          edge_var_[e] = out;
          edge_control_[e] = var.control ? 1 : 0;
        }
      }
      const std::string var = edge_var_[e] < 0 ? "" : graph.ssa.vars[edge_var_[e]].name;
      edge_detail_[e] = trace_->Intern(var);
      tg.edges.push_back({op.id, to, var, edge_control_[e] != 0});
    }
  }
}

void GraphTracer::PrepareSlot(IterationSlot& slot) const {
  if (trace_ == nullptr) return;
  const BuiltGraph& graph = graph_built_;
  slot.trace_edge_vars.assign(graph.successor_list.size(), nullptr);
  for (size_t e = 0; e < graph.successor_list.size(); ++e) {
    if (edge_var_[e] < 0 || edge_control_[e]) continue;
    const VarNode& var = graph.ssa.vars[edge_var_[e]];
    slot.trace_edge_vars[e] = slot.ScopeOf(var.place)->FindVar(var.name);
  }
}

int GraphTracer::chunk_lane(int merge, int place) const {
  return chunk_lanes_[static_cast<size_t>(merge * graph_built_.places() + place)];
}

void GraphTracer::Span(TraceEventKind kind, int lane, int node, int stream_index, int64_t begin_ns,
                       const IterationSlot& slot, int64_t bytes, int64_t raw_bytes) const {
  TraceEvent e;
  e.bytes = bytes;
  e.raw_bytes = raw_bytes;
  e.kind = kind;
  e.begin_ns = begin_ns;
  e.end_ns = TraceRecorder::Now();
  e.lane = lane;
  e.peer = stream_index;
  e.node = node;
  e.iteration = slot.iteration;
  e.graph = static_cast<uint16_t>(graph_);
  trace_->Record(e);
  // What this lane sends next (its readiness messages, wakes) leaves from this span.
  CurrentTrace() = {trace_, lane, graph_, slot.iteration, e.end_ns};
}

void GraphTracer::Sends(const Task& task, const IterationSlot& slot, bool device) const {
  const int from = lanes_[static_cast<size_t>(task.node)];
  const int64_t sent = TraceSendTime(CurrentTrace(), from);
  const int32_t first = graph_built_.successor_begin[static_cast<size_t>(task.node)];
  for (int32_t i = 0; i < task.successor_count; ++i) {
    const size_t edge = static_cast<size_t>(first + i);
    TraceEvent e;
    e.kind = TraceEventKind::kMessage;
    e.sub = static_cast<uint8_t>(edge_control_[edge] ? MessageKind::kControl : MessageKind::kData);
    e.begin_ns = e.end_ns = sent;
    e.lane = from;
    e.peer = lanes_[static_cast<size_t>(task.successors[i])];
    e.node = task.successors[i];
    e.iteration = slot.iteration;
    e.graph = static_cast<uint16_t>(graph_);
    e.detail = edge_detail_[edge];
    // A device op's outputs are written on its stream's thread, later.
    e.bytes = device ? 0 : PayloadBytes(slot.trace_edge_vars[edge]);
    trace_->Record(e);
  }
}

void GraphTracer::ChunkMessages(const GradientMerge& merge, MergeState& state,
                                const IterationSlot& slot) const {
  const int n = graph_built_.places();
  const int64_t now = TraceRecorder::Now();
  state.issued_ns = now;
  for (int p = 0; p < n; ++p) {
    TraceEvent e;
    e.kind = TraceEventKind::kMessage;
    e.sub = static_cast<uint8_t>(MessageKind::kChunk);
    e.begin_ns = e.end_ns = now;
    e.lane = lanes_[static_cast<size_t>(merge.node)];
    e.peer = chunk_lane(merge.order, p);
    e.node = merge.node;
    e.iteration = slot.iteration;
    e.graph = static_cast<uint16_t>(graph_);
    trace_->Record(e);
  }
}

void GraphTracer::Iteration(const IterationSlot& slot) const {
  TraceEvent e;
  e.kind = TraceEventKind::kIteration;
  e.begin_ns = slot.started_ns.load(std::memory_order_relaxed);
  e.end_ns = TraceRecorder::Now();
  e.lane = driver_lane_;
  e.iteration = slot.iteration;
  e.graph = static_cast<uint16_t>(graph_);
  trace_->Record(e);
}

void GraphTracer::WakeReceived(const Stream& stream, uint32_t id, int64_t begin_ns) const {
  TraceEvent e;
  e.kind = TraceEventKind::kReceive;
  e.sub = static_cast<uint8_t>(MessageKind::kWake);
  e.id = id;
  e.begin_ns = begin_ns;
  e.end_ns = TraceRecorder::Now();
  e.lane = stream.trace_lane();
  e.graph = static_cast<uint16_t>(graph_);
  trace_->Record(e);
}

void GraphTracer::DriverWait(WaitKind kind, const std::string& what, int64_t begin_ns,
                             int iteration) const {
  if (trace_ == nullptr) return;
  TraceEvent e;
  e.kind = TraceEventKind::kWait;
  e.sub = static_cast<uint8_t>(kind);
  e.begin_ns = begin_ns;
  e.end_ns = TraceRecorder::Now();
  e.lane = driver_lane_;
  e.iteration = iteration;
  e.graph = static_cast<uint16_t>(graph_);
  e.detail = trace_->Intern(what);
  trace_->Record(e);
}

}  // namespace rill
