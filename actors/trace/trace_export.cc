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
//
// Every value is serialized by nlohmann-json; a file is streamed element by
// element (an event, a lane, a graph node), never built as one document, and
// each kind of event is one object refilled per event, so that writing
// millions of them allocates next to nothing.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "actors/trace/trace_window.h"
#include "rill/trace_recorder.h"

namespace rill {
namespace {

// Objects keep their keys in the order written (ph, cat, name, ... as in
// actors/trace/trace_format.md).
using Json = nlohmann::ordered_json;

constexpr int kLaneTidBase = 10000;
int64_t Tid(int lane) { return lane > 0 ? kLaneTidBase + lane : lane; }

uint64_t Key(int iteration, int lane) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(iteration)) << 32) |
         static_cast<uint32_t>(lane);
}

// A value as JSON text; bytes that are not UTF-8 (a name from a program
// file) become U+FFFD instead of failing the file.
std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The elements of one JSON array, written to the stream one at a time (a
// file holds millions of events: it is never one document in memory).
class Elements {
 public:
  explicit Elements(std::ostream& out) : out_(out) {}
  void Add(const Json& value) {
    out_ << (first_ ? "\n" : ",\n") << Dump(value);
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// The members of an object without its braces ("a":1,"b":2), to open an
// object whose last members are streamed arrays.
void WriteMembers(std::ostream& out, const Json& object) {
  const std::string text = Dump(object);
  out.write(text.data() + 1, static_cast<std::streamsize>(text.size()) - 2);
}

// Sets a value in place: a string keeps its capacity, so refilling an event
// allocates nothing once its strings have grown.
void Set(Json& slot, std::string_view text) {
  if (slot.is_string()) {
    slot.get_ref<Json::string_t&>().assign(text);
  } else {
    slot = text;
  }
}
template <class T>
requires std::is_arithmetic_v<T>
void Set(Json& slot, T value) { slot = value; }

// The events of one shape (kernels, waits, flow starts, ...): one object whose
// keys are laid out once, in the order of actors/trace/trace_format.md, and
// whose values are overwritten for each event.
class EventShape {
 public:
  // {"ph":ph,"cat":cat,"name":..,"pid":..,"tid":..,"ts":.., `fields`..., "args":{`args`...}}
  EventShape(const char* ph, const char* cat, std::initializer_list<const char*> fields,
             std::initializer_list<const char*> args) {
    for (const char* key : {"ph", "cat", "name", "pid", "tid", "ts"}) json_[key] = nullptr;
    json_["ph"] = ph;
    json_["cat"] = cat;
    for (const char* key : fields) json_[key] = nullptr;
    Json& args_object = json_["args"] = Json::object();
    for (const char* key : args) args_object[key] = nullptr;
  }
  Json& operator[](const char* key) { return json_[key]; }
  Json& arg(const char* key) { return json_["args"][key]; }
  const Json& json() const { return json_; }

 private:
  Json json_;
};

// Fills the events of one file: keeps the origin and the lane table at hand.
class EventMaker {
 public:
  EventMaker(int64_t origin_ns, const std::vector<TraceLane>& lanes)
      : origin_ns_(origin_ns), lanes_(lanes) {}

  // Microseconds since the origin (nanoseconds in the decimals).
  double Us(int64_t ns) const { return static_cast<double>(ns - origin_ns_) / 1000; }
  static double Dur(int64_t ns) { return static_cast<double>(std::max<int64_t>(ns, 0)) / 1000; }
  const TraceLane& lane(int id) const { return lanes_[static_cast<size_t>(id - 1)]; }
  bool valid(int id) const { return id >= 1 && id <= static_cast<int>(lanes_.size()); }

  // Sets what every event has: name, pid, tid, ts.
  void Start(EventShape& event, std::string_view name, int lane_id, int64_t ts) const {
    Set(event["name"], name);
    Set(event["pid"], lane(lane_id).pid);
    Set(event["tid"], Tid(lane_id));
    Set(event["ts"], Us(ts));
  }
  // The same for a complete ("X") event from begin_ns to end_ns, with the args
  // every slice has.
  void Slice(EventShape& event, std::string_view name, const TraceEvent& e, int lane_id,
             int64_t begin_ns, int64_t end_ns) const {
    Start(event, name, lane_id, begin_ns);
    Set(event["dur"], Dur(end_ns - begin_ns));
    Set(event.arg("graph"), e.graph);
    Set(event.arg("iteration"), e.iteration);
  }

 private:
  int64_t origin_ns_;
  const std::vector<TraceLane>& lanes_;
};

// A message's flow end, written after every slice.
struct FlowEnd {
  int64_t id;
  const char* name;
  int lane;
  int64_t ts;
  int iteration;
};

const std::string kUnknownType = "?";
const std::string kCollectiveType = "collective";

const char* RoleOf(const std::string& role) { return role.empty() ? "other" : role.c_str(); }

}  // namespace

void TraceRecorder::WriteJson(std::ostream& out, int64_t since_ns) const {
  TraceTables tables{Events(), lanes(), graphs()};
  if (since_ns > 0) tables = TraceWindow(tables, since_ns);
  std::vector<TraceEvent>& events = tables.events;
  std::sort(events.begin(), events.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.begin_ns < b.begin_ns; });
  const std::vector<TraceLane>& lane_table = tables.lanes;
  const std::vector<TraceGraph>& graph_table = tables.graphs;
  std::vector<std::pair<int, std::string>> processes;
  std::vector<std::string> texts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    processes = process_names_;
    texts = texts_;
  }
  const std::string no_text;
  auto text = [&](int id) -> const std::string& {
    return id >= 0 && id < static_cast<int>(texts.size()) ? texts[static_cast<size_t>(id)]
                                                          : no_text;
  };
  const EventMaker w(origin_ns_, lane_table);

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
  Elements trace_events(out);
  for (const auto& [pid, name] : processes) {
    trace_events.Add({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", pid},
                      {"args", {{"name", name}}}});
    trace_events.Add({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"tid", pid},
                      {"args", {{"sort_index", pid}}}});
  }
  for (size_t i = 0; i < lane_table.size(); ++i) {
    const int64_t tid = Tid(static_cast<int>(i + 1));
    trace_events.Add({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", lane_table[i].pid},
                      {"tid", tid},
                      {"args", {{"name", lane_table[i].name}}}});
    trace_events.Add({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", lane_table[i].pid},
                      {"tid", tid},
                      {"args", {{"sort_index", i + 1}}}});
  }

  auto node_of = [&](const TraceEvent& e) -> const TraceGraph::Node* {
    if (e.graph >= graph_table.size()) return nullptr;
    const auto& nodes = graph_table[e.graph].nodes;
    return e.node >= 0 && e.node < static_cast<int>(nodes.size())
               ? &nodes[static_cast<size_t>(e.node)]
               : nullptr;
  };
  // One shape per kind of event, refilled for each.
  EventShape kernel("X", "kernel", {"dur"},
                    {"graph", "iteration", "node", "op", "type", "place", "stream"});
  EventShape collective("X", "kernel", {"dur"},
                        {"graph", "iteration", "node", "type", "collective", "bytes", "raw_bytes"});
  EventShape wait("X", "wait", {"dur"}, {"graph", "iteration", "place", "what"});
  EventShape iteration("X", "iteration", {"dur"}, {"graph", "iteration"});
  EventShape send("X", "network", {"dur"}, {"graph", "iteration", "var", "bytes", "raw_bytes"});
  EventShape receive("X", "receive", {"dur"}, {"graph", "iteration"});
  EventShape flow_start(
      "s", "message", {"id"},
      {"graph", "iteration", "from", "to", "from_node", "to_node", "var", "bytes"});
  EventShape flow_end("f", "message", {"id", "bp"}, {"iteration"});
  Set(flow_end["bp"], "e");
  int64_t flow_id = 0;
  int64_t unmatched = 0;
  std::vector<FlowEnd> flow_ends;  // written after every slice
  for (const TraceEvent& e : events) {
    if (!w.valid(e.lane)) continue;
    const TraceLane& lane = w.lane(e.lane);
    switch (e.kind) {
      case TraceEventKind::kKernel: {
        const TraceGraph::Node* node = node_of(e);
        const std::string& type = node ? node->type : kUnknownType;
        w.Slice(kernel, lane.kind == "chunk" ? type + " chunk" : type, e, e.lane, e.begin_ns,
                e.end_ns);
        Set(kernel.arg("node"), e.node);
        Set(kernel.arg("op"), node ? node->op : -1);
        Set(kernel.arg("type"), type);
        Set(kernel.arg("place"), lane.place);
        Set(kernel.arg("stream"), e.peer);
        trace_events.Add(kernel.json());
        break;
      }
      case TraceEventKind::kCollective: {
        const TraceGraph::Node* node = node_of(e);
        const std::string& type = node ? node->type : kCollectiveType;
        w.Slice(collective, type, e, e.lane, e.begin_ns, e.end_ns);
        Set(collective.arg("node"), e.node);
        Set(collective.arg("type"), type);
        Set(collective.arg("collective"), node ? node->collective : -1);
        Set(collective.arg("bytes"), e.bytes);
        Set(collective.arg("raw_bytes"), e.raw_bytes);
        trace_events.Add(collective.json());
        if (node == nullptr) break;
        auto it = arrivals.find(Key(e.iteration, e.lane));
        for (size_t p = 0; p < node->chunk_lanes.size() && it != arrivals.end(); ++p) {
          auto arrived = it->second.find(static_cast<int>(p));
          if (arrived == it->second.end() || !w.valid(node->chunk_lanes[p])) continue;
          w.Slice(wait, "barrier", e, node->chunk_lanes[p], arrived->second, e.begin_ns);
          Set(wait.arg("place"), p);
          Set(wait.arg("what"), lane.name);
          trace_events.Add(wait.json());
        }
        break;
      }
      case TraceEventKind::kWait:
        w.Slice(wait, WaitKindName(static_cast<WaitKind>(e.sub)), e, e.lane, e.begin_ns, e.end_ns);
        Set(wait.arg("place"), lane.place);
        Set(wait.arg("what"), text(e.detail));
        trace_events.Add(wait.json());
        break;
      case TraceEventKind::kIteration:
        w.Slice(iteration, "iteration " + std::to_string(e.iteration), e, e.lane, e.begin_ns,
                e.end_ns);
        trace_events.Add(iteration.json());
        break;
      case TraceEventKind::kSend:
        w.Slice(send, "send", e, e.lane, e.begin_ns, e.end_ns);
        Set(send.arg("var"), text(e.detail));
        Set(send.arg("bytes"), e.bytes);
        Set(send.arg("raw_bytes"), e.raw_bytes);
        trace_events.Add(send.json());
        break;
      case TraceEventKind::kReceive:
        w.Slice(receive, MessageKindName(static_cast<MessageKind>(e.sub)), e, e.lane, e.begin_ns,
                e.end_ns);
        trace_events.Add(receive.json());
        break;
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
        const char* name = MessageKindName(kind);
        ++flow_id;
        w.Start(flow_start, name, e.lane, e.begin_ns);
        Set(flow_start["id"], flow_id);
        Set(flow_start.arg("graph"), e.graph);
        Set(flow_start.arg("iteration"), e.iteration);
        Set(flow_start.arg("from"), Tid(e.lane));
        Set(flow_start.arg("to"), Tid(e.peer));
        Set(flow_start.arg("from_node"), lane.node);
        Set(flow_start.arg("to_node"), to ? to->id : w.lane(e.peer).node);
        Set(flow_start.arg("var"), text(e.detail));
        Set(flow_start.arg("bytes"), e.bytes);
        trace_events.Add(flow_start.json());
        flow_ends.push_back({flow_id, name, e.peer, std::max(received, e.begin_ns), e.iteration});
        break;
      }
    }
  }
  for (const FlowEnd& end : flow_ends) {
    w.Start(flow_end, end.name, end.lane, end.ts);
    Set(flow_end["id"], end.id);
    Set(flow_end.arg("iteration"), end.iteration);
    trace_events.Add(flow_end.json());
  }

  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  out << "\n],\n\"rill\":{";
  WriteMembers(out, {{"format", 1},
                     {"node", std::string(host) + ":" + std::to_string(getpid())},
                     {"clock", {{"origin_wall_ns", origin_wall_ns_}, {"offset_ns", 0}}},
                     {"dropped_events", dropped()},
                     {"unmatched_messages", unmatched}});
  out << ",\n\"lanes\":[";
  Elements lanes_out(out);
  for (size_t i = 0; i < lane_table.size(); ++i) {
    const TraceLane& l = lane_table[i];
    lanes_out.Add({{"tid", Tid(static_cast<int>(i + 1))},
                   {"pid", l.pid},
                   {"kind", l.kind},
                   {"name", l.name},
                   {"graph", l.graph},
                   {"node", l.node},
                   {"place", l.place}});
  }
  out << "],\n\"graphs\":[";
  for (size_t g = 0; g < graph_table.size(); ++g) {
    const TraceGraph& graph = graph_table[g];
    out << (g ? ",\n{" : "\n{");
    WriteMembers(out, {{"id", g},
                       {"block", graph.block},
                       {"parent_lane", Tid(graph.parent_lane)},
                       {"places", graph.places},
                       {"streams_per_place", graph.streams_per_place},
                       {"driver_lane", Tid(graph.driver_lane)}});
    out << ",\"nodes\":[";
    Elements nodes(out);
    for (const TraceGraph::Node& n : graph.nodes) {
      nodes.Add({{"id", n.id},
                 {"type", n.type},
                 {"op", n.op},
                 {"place", n.place},
                 {"stream", n.stream},
                 {"kind", n.kind},
                 {"role", RoleOf(n.role)},
                 {"tid", Tid(n.lane)}});
    }
    out << "],\"edges\":[";
    Elements edges(out);
    for (const TraceGraph::Edge& edge : graph.edges) {
      edges.Add({{"from", edge.from},
                 {"to", edge.to},
                 {"var", edge.var},
                 {"kind", edge.control ? "control" : "data"}});
    }
    out << "]}";
  }
  out << "]}}\n";
}

}  // namespace rill
