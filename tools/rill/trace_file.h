// A trace file (format: actors/trace/trace_format.md) loaded for the `rill trace`
// tools. ParseTraceJson checks only the outer shape, for tools that rewrite
// the whole document (merge, view); ParseTrace also indexes what the summary
// needs: the non-metadata events with their args pulled out, process and lane
// names, and the graphs of the `rill` key. Plain values, not synchronised.
//
//   const Trace trace = LoadTrace("run.trace.json");
//   for (const TraceEvent& e : trace.events)
//     if (e.category == "kernel") total += e.dur;
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rill::trace {

// An args field the event does not have, or a node without a lane.
inline constexpr int64_t kNone = -1;
// A merged file's k-th input has pids 1000 k + pid (trace_merge.h).
inline constexpr int64_t kMergedPidStride = 1000;

struct TraceEvent {
  std::string phase;     // "X", "s", "f", ...; metadata ("M") is not kept as events
  std::string category;  // cat
  std::string name;
  int64_t pid = 0;
  int64_t tid = 0;
  double ts = 0;   // µs from the trace's origin
  double dur = 0;  // µs; 0 unless the event has a dur
  // From args; kNone when absent.
  int64_t graph = kNone;
  int64_t iteration = kNone;
  int64_t node = kNone;
  int64_t place = kNone;
  int64_t stream = kNone;
  int64_t bytes = 0;  // args.bytes of a message or a gradient merge, else 0
  // args.raw_bytes: a gradient merge's or a sent gradient's bytes as float32
  // (bytes is what was merged or sent); kNone when absent.
  int64_t raw_bytes = kNone;
  std::string type;  // args.type of a kernel, else empty

  double end() const { return ts + dur; }
};

struct GraphNode {
  int64_t id = 0;
  std::string type;
  std::string kind;  // compute, feed, collective
  int64_t place = kNone;
  int64_t stream = kNone;
};

struct GraphEdge {
  int64_t from = 0;  // node ids
  int64_t to = 0;
};

struct TraceGraph {
  int64_t id = 0;
  std::map<int64_t, GraphNode> nodes;  // by node id
  std::vector<GraphEdge> edges;
};

struct Lane {
  int64_t pid = 0;
  std::string name;
  std::string kind;  // rill.lanes kind; empty when only metadata names the lane
};

struct Trace {
  std::string path;                              // names the file in messages
  std::vector<TraceEvent> events;                // non-metadata events, in file order
  std::map<int64_t, std::string> process_names;  // by pid
  std::map<int64_t, Lane> lanes;                 // by tid (unique in a file)
  std::map<int64_t, TraceGraph> graphs;          // by graph id
  std::vector<std::string> inputs;               // rill.inputs of a merged file
  int64_t dropped_events = 0;

  // The lane's thread_name, else its rill.lanes name, else "tid N".
  std::string LaneName(int64_t tid) const;
};

// "graphs 0, 1000" or "no graphs", for messages.
std::string GraphIds(const Trace& trace);

// The whole text of a file. Throws rill::Error: kNotFound when it does not
// exist, kIo when it cannot be read.
std::string ReadTextFile(const std::string& path);

// Parses `text` as a trace document: an object with a traceEvents array (or
// Chrome's bare array of events, returned wrapped in such an object). `path`
// names it in errors: kParse for invalid JSON (with the parser's line, column
// and byte), kInvalidArgument for JSON that is not a trace.
nlohmann::json ParseTraceJson(const std::string& text, const std::string& path);

// ParseTraceJson, then indexes it. Also kInvalidArgument for an event whose
// ts or dur is not a number.
Trace ParseTrace(const std::string& text, const std::string& path);
Trace LoadTrace(const std::string& path);

// obj[key] as an integer; `fallback` when obj is not an object or the value
// is missing or not a number. Shared with merge, which rewrites these fields.
int64_t IntField(const nlohmann::json& obj, const char* key, int64_t fallback = kNone);
// obj[key] as a string; empty when obj is not an object or it is not a string.
std::string StringField(const nlohmann::json& obj, const char* key);
// Calls f on each element of obj[key] when obj is an object and that is an
// array; `Json` is json or const json.
template <class Json, class F>
void ForEachElement(Json& obj, const char* key, F f) {
  if (!obj.is_object()) return;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return;
  for (auto& element : *it) f(element);
}

}  // namespace rill::trace
