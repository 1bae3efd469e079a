// TraceRecorder::WriteJson: the recorded events as Chrome trace-event JSON
// (actors/trace/trace_format.md). Messages become flow-event pairs: a receive that
// is not recorded as an event of its own (an op's readiness, a chunk handed
// to a place) is the receiver's first kernel of that iteration. Barrier
// waits are derived here, off the hot path: a place waits from the moment its
// last gradient of a bucket was sent to the barrier's release.
//
// For Perfetto (older versions too): traceEvents before any key of ours; no
// displayTimeUnit; pids from 1; lane tids (from kLaneTidBase) never equal a
// pid, and a process's own metadata sits on tid == pid; flow ends after all
// slices, so that an end at a slice's start time is read after the slice.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "rill/trace_recorder.h"

namespace rill {
namespace {

constexpr int kLaneTidBase = 10000;
int64_t Tid(int lane) { return lane > 0 ? kLaneTidBase + lane : lane; }

uint64_t Key(int iteration, int lane) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(iteration)) << 32) |
         static_cast<uint32_t>(lane);
}

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Writes the events of one file: keeps the origin and the lane table at hand.
class JsonWriter {
 public:
  JsonWriter(std::ostream& out, int64_t origin_ns, const std::vector<TraceLane>& lanes)
      : out_(out), origin_ns_(origin_ns), lanes_(lanes) {}

  // Microseconds since the origin, with nanosecond decimals.
  std::string Us(int64_t ns) const {
    const int64_t t = ns - origin_ns_;
    char text[40];
    std::snprintf(text, sizeof text, "%s%lld.%03lld", t < 0 ? "-" : "",
                  static_cast<long long>(std::abs(t) / 1000),
                  static_cast<long long>(std::abs(t) % 1000));
    return text;
  }
  std::string Dur(int64_t ns) const { return Us(origin_ns_ + std::max<int64_t>(ns, 0)); }
  const TraceLane& lane(int id) const { return lanes_[static_cast<size_t>(id - 1)]; }
  bool valid(int id) const { return id >= 1 && id <= static_cast<int>(lanes_.size()); }

  // Starts an event: {"ph":..,"cat":..,"name":..,"pid":..,"tid":..,"ts":..
  void Begin(const char* ph, const char* cat, const std::string& name, int lane_id, int64_t ts) {
    Begin(out_, ph, cat, name, lane_id, ts);
  }
  // The same, into `to` (events kept for the end of the file).
  void Begin(std::ostream& to, const char* ph, const char* cat, const std::string& name,
             int lane_id, int64_t ts) {
    to << (first_ ? "\n" : ",\n") << "{\"ph\":\"" << ph << "\",\"cat\":\"" << cat
       << "\",\"name\":" << Quoted(name) << ",\"pid\":" << lane(lane_id).pid
       << ",\"tid\":" << Tid(lane_id) << ",\"ts\":" << Us(ts);
    first_ = false;
  }
  void Raw(const std::string& text) {
    out_ << (first_ ? "\n" : ",\n") << text;
    first_ = false;
  }
  std::ostream& out() { return out_; }

 private:
  std::ostream& out_;
  int64_t origin_ns_;
  const std::vector<TraceLane>& lanes_;
  bool first_ = true;
};

const char* RoleOf(const std::string& role) { return role.empty() ? "other" : role.c_str(); }

}  // namespace

void TraceRecorder::WriteJson(std::ostream& out) const {
  std::vector<TraceEvent> events = Events();
  std::sort(events.begin(), events.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.begin_ns < b.begin_ns; });
  const std::vector<TraceLane> lane_table = lanes();
  const std::vector<TraceGraph> graph_table = graphs();
  std::vector<std::pair<int, std::string>> processes;
  std::vector<std::string> texts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    processes = process_names_;
    texts = texts_;
  }
  auto text = [&](int id) {
    return id >= 0 && id < static_cast<int>(texts.size()) ? texts[static_cast<size_t>(id)]
                                                          : std::string();
  };
  JsonWriter w(out, origin_ns_, lane_table);

  // Where each lane began working in each iteration, and the matched receives.
  std::unordered_map<uint64_t, int64_t> started;
  std::unordered_map<uint32_t, const TraceEvent*> receives;
  // A collective lane's last arrival from each place: (iteration, lane) -> by place.
  std::unordered_map<uint64_t, std::map<int, int64_t>> arrivals;
  for (const TraceEvent& e : events) {
    if (!w.valid(e.lane)) continue;
    if (e.kind == TraceEventKind::kKernel || e.kind == TraceEventKind::kCollective) {
      started.emplace(Key(e.iteration, e.lane), e.begin_ns);  // events are sorted: the first
    } else if (e.kind == TraceEventKind::kReceive) {
      receives[e.id] = &e;
    } else if (e.kind == TraceEventKind::kMessage && w.valid(e.peer) &&
               w.lane(e.peer).kind == "collective") {
      int64_t& last = arrivals[Key(e.iteration, e.peer)][w.lane(e.lane).place];
      last = std::max(last, e.begin_ns);
    }
  }

  out << "{\"traceEvents\":[";
  for (const auto& [pid, name] : processes) {
    const std::string ids = ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(pid);
    w.Raw("{\"ph\":\"M\",\"name\":\"process_name\"" + ids + ",\"args\":{\"name\":" + Quoted(name) +
          "}}");
    w.Raw("{\"ph\":\"M\",\"name\":\"process_sort_index\"" + ids +
          ",\"args\":{\"sort_index\":" + std::to_string(pid) + "}}");
  }
  for (size_t i = 0; i < lane_table.size(); ++i) {
    const std::string prefix = "{\"ph\":\"M\",\"pid\":" + std::to_string(lane_table[i].pid) +
                               ",\"tid\":" + std::to_string(Tid(static_cast<int>(i + 1))) +
                               ",\"name\":";
    w.Raw(prefix + "\"thread_name\",\"args\":{\"name\":" + Quoted(lane_table[i].name) + "}}");
    w.Raw(prefix + "\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(i + 1) +
          "}}");
  }

  auto node_of = [&](const TraceEvent& e) -> const TraceGraph::Node* {
    if (e.graph >= graph_table.size()) return nullptr;
    const auto& nodes = graph_table[e.graph].nodes;
    return e.node >= 0 && e.node < static_cast<int>(nodes.size())
               ? &nodes[static_cast<size_t>(e.node)]
               : nullptr;
  };
  int64_t flow_id = 0;
  int64_t unmatched = 0;
  std::ostringstream flow_ends;  // written after every slice
  for (const TraceEvent& e : events) {
    if (!w.valid(e.lane)) continue;
    const TraceLane& lane = w.lane(e.lane);
    const std::string common = ",\"args\":{\"graph\":" + std::to_string(e.graph) +
                               ",\"iteration\":" + std::to_string(e.iteration);
    switch (e.kind) {
      case TraceEventKind::kKernel: {
        const TraceGraph::Node* node = node_of(e);
        const std::string type = node ? node->type : "?";
        w.Begin("X", "kernel", lane.kind == "chunk" ? type + " chunk" : type, e.lane, e.begin_ns);
        w.out() << ",\"dur\":" << w.Dur(e.end_ns - e.begin_ns) << common << ",\"node\":" << e.node
                << ",\"op\":" << (node ? node->op : -1) << ",\"type\":" << Quoted(type)
                << ",\"place\":" << lane.place << ",\"stream\":" << e.peer << "}}";
        break;
      }
      case TraceEventKind::kCollective: {
        const TraceGraph::Node* node = node_of(e);
        w.Begin("X", "kernel", node ? node->type : "collective", e.lane, e.begin_ns);
        w.out() << ",\"dur\":" << w.Dur(e.end_ns - e.begin_ns) << common << ",\"node\":" << e.node
                << ",\"type\":" << Quoted(node ? node->type : "collective")
                << ",\"collective\":" << (node ? node->collective : -1) << ",\"bytes\":" << e.bytes
                << ",\"raw_bytes\":" << e.raw_bytes << "}}";
        if (node == nullptr) break;
        auto it = arrivals.find(Key(e.iteration, e.lane));
        for (size_t p = 0; p < node->chunk_lanes.size() && it != arrivals.end(); ++p) {
          auto arrived = it->second.find(static_cast<int>(p));
          if (arrived == it->second.end() || !w.valid(node->chunk_lanes[p])) continue;
          w.Begin("X", "wait", "barrier", node->chunk_lanes[p], arrived->second);
          w.out() << ",\"dur\":" << w.Dur(e.begin_ns - arrived->second) << common
                  << ",\"place\":" << p << ",\"what\":" << Quoted(lane.name) << "}}";
        }
        break;
      }
      case TraceEventKind::kWait:
        w.Begin("X", "wait", WaitKindName(static_cast<WaitKind>(e.sub)), e.lane, e.begin_ns);
        w.out() << ",\"dur\":" << w.Dur(e.end_ns - e.begin_ns) << common
                << ",\"place\":" << lane.place << ",\"what\":" << Quoted(text(e.detail)) << "}}";
        break;
      case TraceEventKind::kIteration:
        w.Begin("X", "iteration", "iteration " + std::to_string(e.iteration), e.lane, e.begin_ns);
        w.out() << ",\"dur\":" << w.Dur(e.end_ns - e.begin_ns) << common << "}}";
        break;
      case TraceEventKind::kSend:
        w.Begin("X", "network", "send", e.lane, e.begin_ns);
        w.out() << ",\"dur\":" << w.Dur(e.end_ns - e.begin_ns) << common
                << ",\"var\":" << Quoted(text(e.detail)) << ",\"bytes\":" << e.bytes
                << ",\"raw_bytes\":" << e.raw_bytes << "}}";
        break;
      case TraceEventKind::kReceive: {
        const auto kind = static_cast<MessageKind>(e.sub);
        w.Begin("X", "receive", MessageKindName(kind), e.lane, e.begin_ns);
        w.out() << ",\"dur\":" << w.Dur(e.end_ns - e.begin_ns) << common << "}}";
        break;
      }
      case TraceEventKind::kMessage: {
        const auto kind = static_cast<MessageKind>(e.sub);
        int64_t received = -1;
        if (kind == MessageKind::kWake || kind == MessageKind::kNetwork) {
          auto it = receives.find(e.id);
          if (it != receives.end()) received = it->second->begin_ns;
        } else {
          auto it = started.find(Key(e.iteration, e.peer));
          if (it != started.end()) received = it->second;
        }
        if (received < 0 || !w.valid(e.peer)) {
          ++unmatched;  // its receiver never ran (a failed iteration) or was not recorded
          break;
        }
        const TraceGraph::Node* to = node_of(e);
        const std::string name = MessageKindName(kind);
        ++flow_id;
        w.Begin("s", "message", name, e.lane, e.begin_ns);
        w.out() << ",\"id\":" << flow_id << common << ",\"from\":" << Tid(e.lane)
                << ",\"to\":" << Tid(e.peer) << ",\"from_node\":" << w.lane(e.lane).node
                << ",\"to_node\":" << (to ? to->id : w.lane(e.peer).node)
                << ",\"var\":" << Quoted(text(e.detail)) << ",\"bytes\":" << e.bytes << "}}";
        w.Begin(flow_ends, "f", "message", name, e.peer, std::max(received, e.begin_ns));
        flow_ends << ",\"id\":" << flow_id
                  << ",\"bp\":\"e\",\"args\":{\"iteration\":" << e.iteration << "}}";
        break;
      }
    }
  }

  out << flow_ends.str();
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  out << "\n],\n\"rill\":{\"format\":1,\"node\":"
      << Quoted(std::string(host) + ":" + std::to_string(getpid()))
      << ",\"clock\":{\"origin_wall_ns\":" << origin_wall_ns_ << ",\"offset_ns\":0}"
      << ",\"dropped_events\":" << dropped() << ",\"unmatched_messages\":" << unmatched
      << ",\n\"lanes\":[";
  for (size_t i = 0; i < lane_table.size(); ++i) {
    const TraceLane& l = lane_table[i];
    out << (i ? ",\n" : "\n") << "{\"tid\":" << Tid(static_cast<int>(i + 1)) << ",\"pid\":" << l.pid
        << ",\"kind\":" << Quoted(l.kind) << ",\"name\":" << Quoted(l.name)
        << ",\"graph\":" << l.graph << ",\"node\":" << l.node << ",\"place\":" << l.place << "}";
  }
  out << "],\n\"graphs\":[";
  for (size_t g = 0; g < graph_table.size(); ++g) {
    const TraceGraph& graph = graph_table[g];
    out << (g ? ",\n" : "\n") << "{\"id\":" << g << ",\"block\":" << graph.block
        << ",\"parent_lane\":" << Tid(graph.parent_lane) << ",\"places\":" << graph.places
        << ",\"streams_per_place\":" << graph.streams_per_place
        << ",\"driver_lane\":" << Tid(graph.driver_lane) << ",\"nodes\":[";
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const TraceGraph::Node& n = graph.nodes[i];
      out << (i ? ",\n" : "\n") << "{\"id\":" << n.id << ",\"type\":" << Quoted(n.type)
          << ",\"op\":" << n.op << ",\"place\":" << n.place << ",\"stream\":" << n.stream
          << ",\"kind\":" << Quoted(n.kind) << ",\"role\":" << Quoted(RoleOf(n.role))
          << ",\"tid\":" << Tid(n.lane) << "}";
    }
    out << "],\"edges\":[";
    for (size_t i = 0; i < graph.edges.size(); ++i) {
      const TraceGraph::Edge& edge = graph.edges[i];
      out << (i ? ",\n" : "\n") << "{\"from\":" << edge.from << ",\"to\":" << edge.to
          << ",\"var\":" << Quoted(edge.var) << ",\"kind\":\""
          << (edge.control ? "control" : "data") << "\"}";
    }
    out << "]}";
  }
  out << "]}}\n";
}

}  // namespace rill
