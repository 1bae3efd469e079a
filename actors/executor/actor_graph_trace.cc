// Tracing an ActorGraph: its lanes (one per op node, stream, collective and
// collective chunk, and a driver lane for its iterations) and its graph are
// registered with the recorder when the graph is built; the run records
// kernels, the readiness messages along the graph's edges, wakes, chunks and
// waits — only for iterations that began while the recorder was on.
#include "actors/executor/actor_graph.h"
#include "actors/trace/trace_context.h"

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

void ActorGraph::RegisterTrace() {
  if (!strategy_.trace) return;
  trace_ = strategy_.trace.get();
  const ExecutionStrategy::TraceParent& parent = strategy_.trace_parent;
  const bool nested = parent.lane > 0;
  auto place_of = [&](int place) { return nested ? parent.place : place; };
  // pid 1: the executor; place p: p + 2 (Perfetto treats pid 0 as the kernel's idle process).
  auto pid_of = [&](int place) { return place_of(place) < 0 ? 1 : place_of(place) + 2; };

  TraceGraph tg;
  tg.block = block_index_;
  tg.parent_lane = nested ? parent.lane : -1;
  tg.places = places();
  tg.streams_per_place = graph_.streams_per_place;
  trace_graph_ = trace_->AddGraph(tg);
  RILL_CHECK(trace_graph_ < 65536, kInvalidArgument, "trace: too many graphs in one recorder");
  // Lanes of graphs after the first say which graph they belong to.
  const std::string prefix = nested             ? StrCat("block ", block_index_, ": ")
                             : trace_graph_ > 0 ? StrCat("graph ", trace_graph_, ": ")
                                                : std::string();
  trace_->SetProcessName(1, "executor");
  for (int p = 0; p < places(); ++p) {
    trace_->SetProcessName(pid_of(p), StrCat("place ", p, " (", places_[p].ToString(), ")"));
  }
  auto add_lane = [&](int place, const char* kind, std::string name, int node) {
    return trace_->AddLane(
        {pid_of(place), kind, prefix + name, trace_graph_, node, place < 0 ? -1 : place_of(place)});
  };
  tg.driver_lane = trace_driver_lane_ = add_lane(nested ? 0 : -1, "driver", "driver", -1);

  const int n = places();
  trace_lanes_.assign(graph_.ops.size(), 0);
  trace_chunk_lanes_.assign(collectives_.size() * static_cast<size_t>(n), 0);
  for (const OpNode& op : graph_.ops) {
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
        trace_chunk_lanes_[static_cast<size_t>(op.collective * n + p)] = lane;
        node.chunk_lanes.push_back(lane);
      }
    } else {
      node.lane = add_lane(op.place, "op", StrCat("op ", op.id, " ", op.type), op.id);
    }
    trace_lanes_[static_cast<size_t>(op.id)] = node.lane;
    tg.nodes.push_back(std::move(node));
  }
  for (auto& stream : streams_) {
    const int lane =
        add_lane(stream->place(), "stream",
                 StrCat("stream ", place_of(stream->place()), ".", stream->index_in_place()), -1);
    stream->set_trace(trace_, lane);
  }

  // Each edge's variable: the producer's output its consumer reads (a data
  // edge), else a control dummy. Kept parallel to successor_list_.
  trace_edge_detail_.assign(successor_list_.size(), -1);
  trace_edge_control_.assign(successor_list_.size(), 1);
  std::vector<int> edge_var(successor_list_.size(), -1);
  for (const OpNode& op : graph_.ops) {
    for (int32_t e = successor_begin_[op.id]; e < successor_begin_[op.id + 1]; ++e) {
      const int to = successor_list_[static_cast<size_t>(e)];
      for (int out : op.outputs) {
        const VarNode& var = graph_.vars[out];
        if (std::find(var.consumers.begin(), var.consumers.end(), to) == var.consumers.end()) {
          continue;
        }
        if (edge_var[e] < 0 || (!var.control && trace_edge_control_[e])) {
          edge_var[e] = out;
          trace_edge_control_[e] = var.control ? 1 : 0;
        }
      }
      const std::string var = edge_var[e] < 0 ? "" : graph_.vars[edge_var[e]].name;
      trace_edge_detail_[e] = trace_->Intern(var);
      tg.edges.push_back({op.id, to, var, trace_edge_control_[e] != 0});
    }
  }
  for (auto& slot : slots_) {
    slot->trace_edge_vars.assign(successor_list_.size(), nullptr);
    slot->collective_issue_ns.assign(collectives_.size(), 0);
    for (size_t e = 0; e < successor_list_.size(); ++e) {
      if (edge_var[e] < 0 || trace_edge_control_[e]) continue;
      const VarNode& var = graph_.vars[edge_var[e]];
      slot->trace_edge_vars[e] = ScopeOf(*slot, var.place)->FindVar(var.name);
    }
  }
  trace_->UpdateGraph(trace_graph_, std::move(tg));
}

void ActorGraph::TraceSpan(TraceEventKind kind, int lane, int node, int stream_index,
                           int64_t begin_ns, const Slot& slot, int64_t bytes, int64_t raw_bytes) {
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
  e.graph = static_cast<uint16_t>(trace_graph_);
  trace_->Record(e);
  // What this lane sends next (its readiness messages, wakes) leaves from this span.
  CurrentTrace() = {trace_, lane, trace_graph_, slot.iteration, e.end_ns};
}

void ActorGraph::TraceSends(const Task& task, const Slot& slot) {
  const int from = trace_lanes_[static_cast<size_t>(task.node)];
  const int64_t sent = TraceSendTime(CurrentTrace(), from);
  const int32_t first = successor_begin_[static_cast<size_t>(task.node)];
  for (int32_t i = 0; i < task.successor_count; ++i) {
    const size_t edge = static_cast<size_t>(first + i);
    TraceEvent e;
    e.kind = TraceEventKind::kMessage;
    e.sub = static_cast<uint8_t>(trace_edge_control_[edge] ? MessageKind::kControl
                                                           : MessageKind::kData);
    e.begin_ns = e.end_ns = sent;
    e.lane = from;
    e.peer = trace_lanes_[static_cast<size_t>(task.successors[i])];
    e.node = task.successors[i];
    e.iteration = slot.iteration;
    e.graph = static_cast<uint16_t>(trace_graph_);
    e.detail = trace_edge_detail_[edge];
    // A device op's outputs are written on its stream's thread, later.
    e.bytes = device_streams_.empty() ? PayloadBytes(slot.trace_edge_vars[edge]) : 0;
    trace_->Record(e);
  }
}

void ActorGraph::TraceChunkMessages(const Collective& c, Slot& slot) {
  const int n = places();
  const int64_t now = TraceRecorder::Now();
  slot.collective_issue_ns[static_cast<size_t>(c.order)] = now;
  for (int p = 0; p < n; ++p) {
    TraceEvent e;
    e.kind = TraceEventKind::kMessage;
    e.sub = static_cast<uint8_t>(MessageKind::kChunk);
    e.begin_ns = e.end_ns = now;
    e.lane = trace_lanes_[static_cast<size_t>(c.node)];
    e.peer = trace_chunk_lanes_[static_cast<size_t>(c.order * n + p)];
    e.node = c.node;
    e.iteration = slot.iteration;
    e.graph = static_cast<uint16_t>(trace_graph_);
    trace_->Record(e);
  }
}

void ActorGraph::TraceIteration(const Slot& slot) {
  TraceEvent e;
  e.kind = TraceEventKind::kIteration;
  e.begin_ns = slot.started_ns.load(std::memory_order_relaxed);
  e.end_ns = TraceRecorder::Now();
  e.lane = trace_driver_lane_;
  e.iteration = slot.iteration;
  e.graph = static_cast<uint16_t>(trace_graph_);
  trace_->Record(e);
}

void ActorGraph::TraceWakeReceived(Stream& stream, uint32_t id, int64_t begin_ns) {
  TraceEvent e;
  e.kind = TraceEventKind::kReceive;
  e.sub = static_cast<uint8_t>(MessageKind::kWake);
  e.id = id;
  e.begin_ns = begin_ns;
  e.end_ns = TraceRecorder::Now();
  e.lane = stream.trace_lane();
  e.graph = static_cast<uint16_t>(trace_graph_);
  trace_->Record(e);
}

void ActorGraph::TraceDriverWait(WaitKind kind, const std::string& what, int64_t begin_ns) {
  if (trace_ == nullptr) return;
  TraceEvent e;
  e.kind = TraceEventKind::kWait;
  e.sub = static_cast<uint8_t>(kind);
  e.begin_ns = begin_ns;
  e.end_ns = TraceRecorder::Now();
  e.lane = trace_driver_lane_;
  e.iteration = next_iteration_.load(std::memory_order_relaxed) - 1;
  e.graph = static_cast<uint16_t>(trace_graph_);
  e.detail = trace_->Intern(what);
  trace_->Record(e);
}

}  // namespace rill
