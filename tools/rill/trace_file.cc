// Loads trace files and indexes their events, lanes and graphs.
#include "tools/rill/trace_file.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rill/error.h"

namespace rill::trace {
namespace {

using nlohmann::json;

// A time field that must be a number when present.
double TimeField(const json& event, const char* key, size_t index, const std::string& path) {
  const auto it = event.find(key);
  if (it == event.end()) return 0;
  RILL_CHECK(it->is_number(), kInvalidArgument, path, ": traceEvents[", index, "].", key,
             " is not a number");
  return it->get<double>();
}

TraceEvent IndexEvent(const json& e, size_t index, const std::string& path) {
  TraceEvent event;
  event.phase = StringField(e, "ph");
  event.category = StringField(e, "cat");
  event.name = StringField(e, "name");
  event.pid = IntField(e, "pid", 0);
  event.tid = IntField(e, "tid", 0);
  RILL_CHECK(e.contains("ts"), kInvalidArgument, path, ": traceEvents[", index, "] has no ts");
  event.ts = TimeField(e, "ts", index, path);
  event.dur = TimeField(e, "dur", index, path);
  if (const auto args = e.find("args"); args != e.end()) {
    event.graph = IntField(*args, "graph");
    event.iteration = IntField(*args, "iteration");
    event.node = IntField(*args, "node");
    event.place = IntField(*args, "place");
    event.stream = IntField(*args, "stream");
    event.bytes = IntField(*args, "bytes", 0);
    event.raw_bytes = IntField(*args, "raw_bytes");
    event.type = StringField(*args, "type");
  }
  return event;
}

void IndexMetadata(const json& e, Trace* trace) {
  const std::string name = StringField(e, "name");
  const auto args = e.find("args");
  const std::string value = args != e.end() ? StringField(*args, "name") : "";
  if (name == "process_name") {
    trace->process_names[IntField(e, "pid", 0)] = value;
  } else if (name == "thread_name") {
    Lane& lane = trace->lanes[IntField(e, "tid", 0)];
    lane.pid = IntField(e, "pid", 0);
    lane.name = value;
  }
}

TraceGraph IndexGraph(const json& g) {
  TraceGraph graph;
  graph.id = IntField(g, "id", 0);
  ForEachElement(g, "nodes", [&](const json& n) {
    GraphNode node;
    node.id = IntField(n, "id", 0);
    node.type = StringField(n, "type");
    node.kind = StringField(n, "kind");
    node.place = IntField(n, "place");
    node.stream = IntField(n, "stream");
    graph.nodes[node.id] = node;
  });
  ForEachElement(g, "edges", [&](const json& e) {
    graph.edges.push_back({IntField(e, "from", 0), IntField(e, "to", 0)});
  });
  return graph;
}

void IndexRill(const json& rill, Trace* trace) {
  if (!rill.is_object()) return;
  trace->dropped_events = IntField(rill, "dropped_events", 0);
  ForEachElement(rill, "lanes", [&](const json& l) {
    Lane& lane = trace->lanes[IntField(l, "tid", 0)];
    lane.pid = IntField(l, "pid", 0);
    lane.kind = StringField(l, "kind");
    if (lane.name.empty()) lane.name = StringField(l, "name");
  });
  ForEachElement(rill, "graphs", [&](const json& g) {
    TraceGraph graph = IndexGraph(g);
    trace->graphs[graph.id] = std::move(graph);
  });
  ForEachElement(rill, "inputs", [&](const json& input) {
    trace->inputs.push_back(input.is_string() ? input.get<std::string>() : input.dump());
  });
}

}  // namespace

int64_t IntField(const json& obj, const char* key, int64_t fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) return std::llround(it->get<double>());
  return fallback;
}

std::string StringField(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Trace::LaneName(int64_t tid) const {
  const auto it = lanes.find(tid);
  if (it != lanes.end() && !it->second.name.empty()) return it->second.name;
  return "tid " + std::to_string(tid);
}

std::string GraphIds(const Trace& trace) {
  if (trace.graphs.empty()) return "no graphs";
  std::string ids = "graphs";
  for (const auto& [id, graph] : trace.graphs)
    ids += (ids.size() == 6 ? " " : ", ") + std::to_string(id);
  return ids;
}

std::string ReadTextFile(const std::string& path) {
  std::error_code ec;
  RILL_CHECK(std::filesystem::exists(path, ec), kNotFound, path, ": no such file");
  RILL_CHECK(!std::filesystem::is_directory(path, ec), kIo, path, ": is a directory");
  std::ifstream in(path, std::ios::binary);
  RILL_CHECK(in, kIo, path, ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  RILL_CHECK(!in.bad(), kIo, path, ": read failed");
  return text.str();
}

json ParseTraceJson(const std::string& text, const std::string& path) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string what = e.what();
    if (const size_t bracket = what.find("] "); bracket != std::string::npos) {
      what = what.substr(bracket + 2);
    }
    Fail(ErrorCode::kParse, path, ": invalid JSON at byte ", e.byte, ": ", what);
  }
  if (doc.is_array()) return json{{"traceEvents", std::move(doc)}};
  RILL_CHECK(doc.is_object(), kInvalidArgument, path,
             ": not a trace file: expected a JSON object with traceEvents, got a ",
             doc.type_name());
  const auto events = doc.find("traceEvents");
  RILL_CHECK(events != doc.end(), kInvalidArgument, path,
             ": not a trace file: no traceEvents key in the top-level object");
  RILL_CHECK(events->is_array(), kInvalidArgument, path, ": traceEvents is a ", events->type_name(),
             ", not an array");
  return doc;
}

Trace ParseTrace(const std::string& text, const std::string& path) {
  const json doc = ParseTraceJson(text, path);
  Trace trace;
  trace.path = path;
  if (const auto rill = doc.find("rill"); rill != doc.end()) IndexRill(*rill, &trace);
  const json& events = doc["traceEvents"];
  trace.events.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    RILL_CHECK(e.is_object(), kInvalidArgument, path, ": traceEvents[", i, "] is a ", e.type_name(),
               ", not an object");
    if (StringField(e, "ph") == "M") {
      IndexMetadata(e, &trace);
    } else {
      trace.events.push_back(IndexEvent(e, i, path));
    }
  }
  return trace;
}

Trace LoadTrace(const std::string& path) { return ParseTrace(ReadTextFile(path), path); }

}  // namespace rill::trace
