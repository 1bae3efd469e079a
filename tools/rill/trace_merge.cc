// Shifts each input's clock and ids, then concatenates the inputs.
#include "tools/rill/trace_merge.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "rill/error.h"
#include "tools/rill/trace_file.h"

namespace rill::trace {
namespace {

using nlohmann::json;

constexpr int64_t kTidStride = 100000;
constexpr int64_t kGraphStride = 1000;

// What to add to one input's fields.
struct Shift {
  int64_t index = 0;
  std::string node;  // the input's rill.node
  double ts_us = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t graph = 0;
  int64_t flow_id = 0;
};

// Adds `delta` to obj[key] when it is an integer (and, with `skip_negative`,
// not a -1 style "none").
void AddTo(json& obj, const char* key, int64_t delta, bool skip_negative) {
  if (!obj.is_object()) return;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return;
  const int64_t value = it->get<int64_t>();
  if (skip_negative && value < 0) return;
  *it = value + delta;
}

// The input's aligned origin, origin_wall_ns + offset_ns.
int64_t AlignedOrigin(const json& doc, const std::string& path) {
  const json& rill = doc.contains("rill") ? doc["rill"] : json();
  const json& clock = rill.is_object() && rill.contains("clock") ? rill["clock"] : json();
  const int64_t origin = IntField(clock, "origin_wall_ns", std::numeric_limits<int64_t>::min());
  RILL_CHECK(origin != std::numeric_limits<int64_t>::min(), kInvalidArgument, path,
             ": no rill.clock.origin_wall_ns, so its clock cannot be aligned with the others");
  return origin + IntField(clock, "offset_ns", 0);
}

// Checks one id-like field is below the stride it is shifted by.
void CheckBelow(const json& obj, const char* key, int64_t stride, const std::string& path,
                const char* what) {
  const int64_t value = IntField(obj, key, 0);
  RILL_CHECK(value < stride, kInvalidArgument, path, ": ", what, " ", value, " is >= ", stride,
             ", so it cannot be shifted apart from the other inputs' (an already merged file?)");
}

// A power of ten above twice the largest |id| of flow events in all inputs.
int64_t FlowIdStride(const std::vector<json>& inputs) {
  int64_t largest = 0;
  for (const json& doc : inputs) {
    for (const json& e : doc["traceEvents"]) {
      for (const char* key : {"id", "bind_id"}) {
        if (e.is_object() && e.contains(key) && e[key].is_number_integer()) {
          largest = std::max<int64_t>(largest, std::abs(e[key].get<int64_t>()));
        }
      }
    }
  }
  int64_t stride = 10;
  while (stride <= 2 * largest) stride *= 10;
  return stride;
}

void ShiftFlowId(json& e, const char* key, const Shift& shift) {
  if (!e.contains(key)) return;
  json& id = e[key];
  if (id.is_number_integer()) {
    id = id.get<int64_t>() + shift.flow_id;
  } else if (id.is_string() && shift.index > 0) {
    id = std::to_string(shift.index) + ":" + id.get<std::string>();
  }
}

void ShiftEvent(json& e, const Shift& shift, const std::string& path) {
  if (!e.is_object()) return;
  CheckBelow(e, "pid", kMergedPidStride, path, "pid");
  CheckBelow(e, "tid", kTidStride, path, "tid");
  const bool metadata = StringField(e, "ph") == "M";
  if (!metadata && e.contains("ts") && e["ts"].is_number()) {
    // Rounded to the nanosecond, so the shortest decimal form stays short.
    e["ts"] = std::round((e["ts"].get<double>() + shift.ts_us) * 1000) / 1000;
  }
  AddTo(e, "pid", shift.pid, false);
  AddTo(e, "tid", shift.tid, false);
  // A process's own metadata names it on its tid == pid (as Perfetto reads it).
  if (metadata && StringField(e, "name").rfind("process_", 0) == 0 && e.contains("pid")) {
    e["tid"] = e["pid"];
  }
  ShiftFlowId(e, "id", shift);
  ShiftFlowId(e, "bind_id", shift);
  if (!e.contains("args") || !e["args"].is_object()) return;
  json& args = e["args"];
  if (metadata) {
    const std::string name = StringField(e, "name");
    if (name == "process_name" && args.contains("name") && args["name"].is_string()) {
      args["name"] = shift.node + ": " + args["name"].get<std::string>();
    } else if (name == "process_sort_index") {
      AddTo(args, "sort_index", shift.pid, false);
    }
    return;
  }
  CheckBelow(args, "graph", kGraphStride, path, "args.graph");
  AddTo(args, "graph", shift.graph, true);
  AddTo(args, "from", shift.tid, true);
  AddTo(args, "to", shift.tid, true);
}

void ShiftRill(json& rill, const Shift& shift, const std::string& path) {
  ForEachElement(rill, "lanes", [&](json& lane) {
    CheckBelow(lane, "tid", kTidStride, path, "rill.lanes tid");
    AddTo(lane, "pid", shift.pid, false);
    AddTo(lane, "tid", shift.tid, false);
    AddTo(lane, "graph", shift.graph, true);
  });
  ForEachElement(rill, "graphs", [&](json& graph) {
    CheckBelow(graph, "id", kGraphStride, path, "graph id");
    AddTo(graph, "id", shift.graph, false);
    AddTo(graph, "parent_lane", shift.tid, true);
    AddTo(graph, "driver_lane", shift.tid, true);
    ForEachElement(graph, "nodes", [&](json& node) { AddTo(node, "tid", shift.tid, true); });
  });
}

}  // namespace

json MergeTraces(std::vector<json> inputs, const std::vector<std::string>& paths) {
  RILL_CHECK(!inputs.empty() && inputs.size() == paths.size(), kInvalidArgument,
             "merge needs one path per input and at least one input");
  std::vector<int64_t> origins;
  for (size_t k = 0; k < inputs.size(); ++k) origins.push_back(AlignedOrigin(inputs[k], paths[k]));
  const int64_t origin = *std::min_element(origins.begin(), origins.end());
  const int64_t flow_stride = FlowIdStride(inputs);

  json events = json::array();
  json lanes = json::array();
  json graphs = json::array();
  json nodes = json::array();
  int64_t dropped = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    json& rill = inputs[k]["rill"];
    Shift shift;
    shift.index = static_cast<int64_t>(k);
    shift.node = StringField(rill, "node");
    if (shift.node.empty()) shift.node = "input " + std::to_string(k);
    shift.ts_us = static_cast<double>(origins[k] - origin) / 1000;
    shift.pid = kMergedPidStride * shift.index;
    shift.tid = kTidStride * shift.index;
    shift.graph = kGraphStride * shift.index;
    shift.flow_id = flow_stride * shift.index;
    for (json& e : inputs[k]["traceEvents"]) {
      ShiftEvent(e, shift, paths[k]);
      events.push_back(std::move(e));
    }
    ShiftRill(rill, shift, paths[k]);
    ForEachElement(rill, "lanes", [&](json& lane) { lanes.push_back(std::move(lane)); });
    ForEachElement(rill, "graphs", [&](json& graph) { graphs.push_back(std::move(graph)); });
    nodes.push_back(shift.node);
    dropped += IntField(rill, "dropped_events", 0);
  }
  return {{"traceEvents", std::move(events)},
          {"rill",
           {{"format", IntField(inputs[0]["rill"], "format", 1)},
            {"node", "merged"},
            {"inputs", std::move(nodes)},
            {"clock", {{"origin_wall_ns", origin}, {"offset_ns", 0}}},
            {"dropped_events", dropped},
            {"lanes", std::move(lanes)},
            {"graphs", std::move(graphs)}}}};
}

void MergeTraceFiles(const std::string& out_path, const std::vector<std::string>& in_paths) {
  std::vector<json> inputs;
  for (const std::string& path : in_paths) {
    inputs.push_back(ParseTraceJson(ReadTextFile(path), path));
  }
  const json merged = MergeTraces(std::move(inputs), in_paths);
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  RILL_CHECK(out, kIo, out_path, ": cannot open for writing");
  // traceEvents first: some Perfetto versions stop reading at the first key they do not know.
  // One event a line, each serialized on its own: the file is never one string in memory.
  out << "{\"traceEvents\":[";
  bool first = true;
  for (const json& event : merged["traceEvents"]) {
    out << (first ? "\n" : ",\n") << event.dump();
    first = false;
  }
  out << "\n],\n\"rill\":" << merged["rill"].dump() << "}\n";
  out.close();
  RILL_CHECK(out, kIo, out_path, ": write failed");
}

}  // namespace rill::trace
