// The trace readers behind `rill trace` (summary, critical path, merge, view)
// on a small synthetic trace whose numbers are known by hand.
#include "tools/rill/trace_summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "rill/error.h"
#include "tools/rill/trace_critical_path.h"
#include "tools/rill/trace_file.h"
#include "tools/rill/trace_merge.h"
#include "tools/rill/trace_view.h"

namespace rill::trace {
namespace {

using nlohmann::json;

// Lanes (tids) of the synthetic trace.
constexpr int kDriver = 1;      // pid 0
constexpr int kCollective = 5;  // pid 0, "allreduce 0"
constexpr int kOpA = 11;        // pid 1 (place 0)
constexpr int kOpB = 12;        // pid 1
constexpr int kOpC = 13;        // pid 2 (place 1)
constexpr int kOpD = 14;        // pid 1
constexpr int kBarrier = 20;    // pid 2, "allreduce 0 @ place 1"

json Kernel(int tid, int pid, const std::string& type, int node, int place, int stream,
            int iteration, double ts, double dur) {
  return {{"ph", "X"},
          {"cat", "kernel"},
          {"name", type},
          {"pid", pid},
          {"tid", tid},
          {"ts", ts},
          {"dur", dur},
          {"args",
           {{"graph", 0},
            {"node", node},
            {"op", node},
            {"type", type},
            {"place", place},
            {"stream", stream},
            {"iteration", iteration}}}};
}

json Complete(const std::string& cat, const std::string& name, int tid, int pid, double ts,
              double dur, json args) {
  return {{"ph", "X"},  {"cat", cat}, {"name", name}, {"pid", pid},
          {"tid", tid}, {"ts", ts},   {"dur", dur},   {"args", std::move(args)}};
}

// A flow pair: the "s" event carries the message's args.
void AddMessage(json* events, const std::string& kind, int id, int from, int from_pid, int to,
                int to_pid, double ts, int64_t bytes) {
  events->push_back(
      {{"ph", "s"},
       {"cat", "message"},
       {"name", kind},
       {"id", id},
       {"pid", from_pid},
       {"tid", from},
       {"ts", ts},
       {"args", {{"graph", 0}, {"iteration", 0}, {"from", from}, {"to", to}, {"bytes", bytes}}}});
  events->push_back({{"ph", "f"},
                     {"cat", "message"},
                     {"name", kind},
                     {"id", id},
                     {"bp", "e"},
                     {"pid", to_pid},
                     {"tid", to},
                     {"ts", ts + 1},
                     {"args", {{"iteration", 0}}}});
}

json Metadata(const std::string& what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

// A diamond a -> b, a -> c, b -> d, c -> d over two places, three iterations.
//   iteration 0 (driver 0..100):   a [10,30]   b [32,62]   c [35,45]   d [70,90]
//   iteration 1 (driver 200..350): a [210,230] b [232,242] c [240,290] d [300,320]
//   iteration 2 (driver 400..520): a [410,420] b [425,465] c [421,431] d [470,500]
// Also: three overlapping collective kernels on one lane, two barrier waits
// on place 1, a stream wait on place 0, and five messages.
json DiamondTrace(const std::string& node = "host:1", int64_t origin_wall_ns = 0,
                  int64_t offset_ns = 0) {
  json events = json::array();
  events.push_back(Metadata("process_name", 0, 0, "executor"));
  events.push_back(Metadata("process_name", 1, 0, "place 0 (cpu:0)"));
  events.push_back(Metadata("process_name", 2, 0, "place 1 (cpu:1)"));
  events.push_back({{"ph", "M"},
                    {"name", "process_sort_index"},
                    {"pid", 1},
                    {"tid", 0},
                    {"args", {{"sort_index", 1}}}});
  events.push_back(Metadata("thread_name", 0, kDriver, "driver"));
  events.push_back(Metadata("thread_name", 1, kOpA, "op 1 matmul"));
  events.push_back(Metadata("thread_name", 1, kOpB, "op 2 relu"));
  events.push_back(Metadata("thread_name", 2, kOpC, "op 3 relu"));
  events.push_back(Metadata("thread_name", 1, kOpD, "op 4 add"));
  const double iteration_ts[] = {0, 200, 400};
  const double iteration_dur[] = {100, 150, 120};
  const double a[3][2] = {{10, 20}, {210, 20}, {410, 10}};
  const double b[3][2] = {{32, 30}, {232, 10}, {425, 40}};
  const double c[3][2] = {{35, 10}, {240, 50}, {421, 10}};
  const double d[3][2] = {{70, 20}, {300, 20}, {470, 30}};
  for (int i = 0; i < 3; ++i) {
    events.push_back(Complete("iteration", "iteration " + std::to_string(i), kDriver, 0,
                              iteration_ts[i], iteration_dur[i], {{"graph", 0}, {"iteration", i}}));
    events.push_back(Kernel(kOpA, 1, "matmul", 1, 0, 0, i, a[i][0], a[i][1]));
    events.push_back(Kernel(kOpB, 1, "relu", 2, 0, 1, i, b[i][0], b[i][1]));
    events.push_back(Kernel(kOpC, 2, "relu", 3, 1, 0, i, c[i][0], c[i][1]));
    events.push_back(Kernel(kOpD, 1, "add", 4, 0, 0, i, d[i][0], d[i][1]));
  }
  // Overlapping: their union on the lane is [100,140] + [200,210] = 50 µs.
  const std::pair<double, double> collective_spans[] = {{100, 30}, {120, 20}, {200, 10}};
  for (const auto& [ts, dur] : collective_spans) {
    events.push_back(Complete("kernel", "allreduce", kCollective, 0, ts, dur,
                              {{"graph", 0}, {"iteration", 1}, {"type", "allreduce"}}));
  }
  events.push_back(Complete("wait", "barrier", kBarrier, 2, 140, 5,
                            {{"graph", 0}, {"iteration", 1}, {"place", 1}}));
  events.push_back(Complete("wait", "barrier", kBarrier, 2, 150, 7,
                            {{"graph", 0}, {"iteration", 1}, {"place", 1}}));
  events.push_back(
      Complete("wait", "stream", kOpB, 1, 60, 3, {{"graph", 0}, {"iteration", 0}, {"place", 0}}));
  AddMessage(&events, "data", 1, kOpA, 1, kOpB, 1, 29.999, 100);
  AddMessage(&events, "data", 2, kOpA, 1, kOpC, 2, 29.999, 200);
  AddMessage(&events, "control", 3, kOpB, 1, kOpD, 1, 61.999, 0);
  AddMessage(&events, "wake", 4, kOpA, 1, kOpB, 1, 5, 0);
  AddMessage(&events, "wake", 5, kOpA, 1, kOpB, 1, 6, 0);

  json nodes = json::array();
  const char* types[] = {"matmul", "relu", "relu", "add"};
  const int places[] = {0, 0, 1, 0};
  const int streams[] = {0, 1, 0, 0};
  const int tids[] = {kOpA, kOpB, kOpC, kOpD};
  for (int i = 0; i < 4; ++i) {
    nodes.push_back({{"id", i + 1},
                     {"type", types[i]},
                     {"place", places[i]},
                     {"stream", streams[i]},
                     {"kind", "compute"},
                     {"tid", tids[i]}});
  }
  json edges = json::array();
  const std::pair<int, int> diamond[] = {{1, 2}, {1, 3}, {2, 4}, {3, 4}};
  for (const auto& [from, to] : diamond) {
    edges.push_back({{"from", from}, {"to", to}, {"kind", "data"}});
  }
  json lanes = json::array();
  lanes.push_back({{"tid", kDriver}, {"pid", 0}, {"kind", "driver"}, {"name", "driver"}});
  lanes.push_back(
      {{"tid", kCollective}, {"pid", 0}, {"kind", "collective"}, {"name", "allreduce 0"}});
  lanes.push_back(
      {{"tid", kOpA}, {"pid", 1}, {"kind", "op"}, {"name", "op 1 matmul"}, {"graph", 0}});
  lanes.push_back({{"tid", kBarrier}, {"pid", 2}, {"kind", "chunk"}, {"name", "allreduce 0 @ 1"}});
  return {{"displayTimeUnit", "ms"},
          {"traceEvents", std::move(events)},
          {"rill",
           {{"format", 1},
            {"node", node},
            {"clock", {{"origin_wall_ns", origin_wall_ns}, {"offset_ns", offset_ns}}},
            {"dropped_events", 1},
            {"lanes", std::move(lanes)},
            {"graphs", json::array({{{"id", 0},
                                     {"parent_lane", -1},
                                     {"driver_lane", kDriver},
                                     {"nodes", std::move(nodes)},
                                     {"edges", std::move(edges)}}})}}}};
}

Trace DiamondParsed() { return ParseTrace(DiamondTrace().dump(), "diamond.json"); }

const LaneUsage* FindLane(const Summary& s, int64_t tid) {
  for (const LaneUsage& lane : s.lanes) {
    if (lane.tid == tid) return &lane;
  }
  return nullptr;
}

std::vector<int64_t> PathNodes(const CriticalPath& path) {
  std::vector<int64_t> nodes;
  for (const CriticalPathStep& step : path.steps) nodes.push_back(step.node);
  return nodes;
}

// Runs f, which must throw rill::Error with `code`; returns its message.
template <class F>
std::string ErrorOf(F f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no rill::Error thrown";
  return "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TraceFileTest, IndexesEventsLanesAndGraphs) {
  const Trace trace = DiamondParsed();
  EXPECT_EQ(trace.process_names.at(1), "place 0 (cpu:0)");
  EXPECT_EQ(trace.LaneName(kOpB), "op 2 relu");           // thread_name
  EXPECT_EQ(trace.LaneName(kCollective), "allreduce 0");  // rill.lanes only
  EXPECT_EQ(trace.LaneName(999), "tid 999");
  EXPECT_EQ(trace.lanes.at(kOpA).kind, "op");
  ASSERT_EQ(trace.graphs.count(0), 1u);
  EXPECT_EQ(trace.graphs.at(0).nodes.size(), 4u);
  EXPECT_EQ(trace.graphs.at(0).edges.size(), 4u);
  EXPECT_EQ(trace.dropped_events, 1);
}

TEST(TraceCriticalPathTest, DefaultIterationIsTheMedianOne) {
  // Iteration times 100, 150, 120: the median is iteration 2's 120.
  EXPECT_EQ(MedianIteration(DiamondParsed(), 0), 2);
}

TEST(TraceCriticalPathTest, FollowsThePredecessorThatEndedLast) {
  const Trace trace = DiamondParsed();
  CriticalPath path = FindCriticalPath(trace, 0, 0);  // b ends after c
  EXPECT_EQ(PathNodes(path), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(path.length_us, 80);  // a's start 10 to d's end 90
  EXPECT_DOUBLE_EQ(path.kernels_us, 70);
  EXPECT_DOUBLE_EQ(path.waits_us, 10);  // b waits 2 after a, d 8 after b
  EXPECT_DOUBLE_EQ(path.iteration_us, 100);
  ASSERT_EQ(path.steps.size(), 3u);
  EXPECT_EQ(path.steps[1].type, "relu");
  EXPECT_EQ(path.steps[1].place, 0);
  EXPECT_EQ(path.steps[1].stream, 1);
  EXPECT_DOUBLE_EQ(path.steps[1].start_us, 32);
  EXPECT_DOUBLE_EQ(path.steps[1].dur_us, 30);
  EXPECT_DOUBLE_EQ(path.steps[1].wait_us, 2);
  EXPECT_DOUBLE_EQ(path.steps[2].wait_us, 8);

  path = FindCriticalPath(trace, 0, 1);  // c ends after b
  EXPECT_EQ(PathNodes(path), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_DOUBLE_EQ(path.length_us, 110);
  EXPECT_DOUBLE_EQ(path.kernels_us, 90);
  EXPECT_DOUBLE_EQ(path.waits_us, 20);
  EXPECT_DOUBLE_EQ(path.steps[0].start_us, 10);  // from the iteration's start, 200
  EXPECT_DOUBLE_EQ(path.iteration_us, 150);
}

TEST(TraceCriticalPathTest, StreamOrderExplainsWaitsForAStream) {
  // x -> z; y is independent but runs on x's and z's stream between them.
  json events =
      json::array({Kernel(1, 1, "x", 1, 0, 0, 0, 0, 10), Kernel(2, 1, "y", 2, 0, 0, 0, 10, 40),
                   Kernel(3, 1, "z", 3, 0, 0, 0, 50, 10),
                   Kernel(4, 1, "w", 4, 0, 1, 0, 0, 45)});  // another stream
  const json doc = {
      {"traceEvents", events},
      {"rill",
       {{"graphs",
         json::array({{{"id", 0}, {"edges", json::array({{{"from", 1}, {"to", 3}}})}}})}}}};
  const Trace trace = ParseTrace(doc.dump(), "streams.json");

  CriticalPath path = FindCriticalPath(trace, 0, 0);
  EXPECT_EQ(PathNodes(path), (std::vector<int64_t>{1, 3}));
  EXPECT_DOUBLE_EQ(path.waits_us, 40);
  EXPECT_EQ(path.steps[1].via, "edge");
  EXPECT_DOUBLE_EQ(path.iteration_us, -1);  // no iteration event

  path = FindCriticalPath(trace, 0, 0, PathEdges::kGraphAndStreamOrder);
  EXPECT_TRUE(path.stream_order);
  EXPECT_EQ(PathNodes(path), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(path.length_us, 60);
  EXPECT_DOUBLE_EQ(path.kernels_us, 60);
  EXPECT_DOUBLE_EQ(path.waits_us, 0);
  EXPECT_EQ(path.steps[0].via, "");
  EXPECT_EQ(path.steps[1].via, "stream");
  EXPECT_EQ(path.steps[2].via, "stream");
  EXPECT_EQ(path.steps[1].type, "y");  // from the event: rill.graphs has no nodes
}

TEST(TraceCriticalPathTest, MissingGraphOrIterationIsNotFound) {
  const Trace trace = DiamondParsed();
  EXPECT_TRUE(Contains(ErrorOf([&] { FindCriticalPath(trace, 7, 0); }, ErrorCode::kNotFound),
                       "no graph 7"));
  EXPECT_TRUE(Contains(ErrorOf([&] { FindCriticalPath(trace, 0, 9); }, ErrorCode::kNotFound),
                       "iteration 9"));
}

TEST(TraceSummaryTest, BusyTimeAndUtilisationPerLaneAndStream) {
  const Summary s = Summarize(DiamondParsed(), {});
  EXPECT_DOUBLE_EQ(s.start_us, 0);
  EXPECT_DOUBLE_EQ(s.span_us, 520);  // iteration 2's driver event ends last
  const LaneUsage* a = FindLane(s, kOpA);
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->busy_us, 50);
  EXPECT_DOUBLE_EQ(a->utilisation, 50.0 / 520);
  EXPECT_EQ(a->name, "op 1 matmul");
  const LaneUsage* collective = FindLane(s, kCollective);
  ASSERT_NE(collective, nullptr);
  EXPECT_DOUBLE_EQ(collective->busy_us, 50);  // overlaps counted once
  EXPECT_EQ(collective->events, 3);
  EXPECT_EQ(FindLane(s, kDriver), nullptr);  // iterations are not busy time
  // Busiest first: b 80, c 70, d 70, a 50, the collective 50.
  EXPECT_EQ(s.lanes.front().tid, kOpB);
  EXPECT_DOUBLE_EQ(s.lanes.front().busy_us, 80);

  ASSERT_EQ(s.streams.size(), 3u);  // the collective's kernels have no stream
  EXPECT_EQ(s.streams[0].place, 0);
  EXPECT_EQ(s.streams[0].stream, 0);
  EXPECT_DOUBLE_EQ(s.streams[0].kernel_us, 120);  // a 50 + d 70
  EXPECT_EQ(s.streams[0].kernels, 6);
  EXPECT_DOUBLE_EQ(s.streams[1].kernel_us, 80);  // b
  EXPECT_EQ(s.streams[2].pid, 2);
  EXPECT_DOUBLE_EQ(s.streams[2].utilisation, 70.0 / 520);
}

TEST(TraceSummaryTest, MessagesWaitsAndTopOps) {
  const Summary s = Summarize(DiamondParsed(), {});
  ASSERT_EQ(s.messages.size(), 3u);
  EXPECT_EQ(s.messages[0].kind, "data");  // ties on count keep name order
  EXPECT_EQ(s.messages[0].count, 2);
  EXPECT_EQ(s.messages[0].bytes, 300);
  EXPECT_EQ(s.messages[1].kind, "wake");
  EXPECT_EQ(s.messages[2].kind, "control");
  EXPECT_EQ(s.messages[2].count, 1);

  ASSERT_EQ(s.waits.size(), 2u);
  EXPECT_EQ(s.waits[0].place, 1);
  EXPECT_EQ(s.waits[0].name, "barrier");
  EXPECT_EQ(s.waits[0].count, 2);
  EXPECT_DOUBLE_EQ(s.waits[0].total_us, 12);
  EXPECT_EQ(s.waits[1].place, 0);
  EXPECT_EQ(s.waits[1].name, "stream");

  EXPECT_DOUBLE_EQ(s.kernel_us, 330);
  ASSERT_EQ(s.ops.size(), 4u);
  EXPECT_EQ(s.ops[0].type, "relu");  // b and c
  EXPECT_EQ(s.ops[0].count, 6);
  EXPECT_DOUBLE_EQ(s.ops[0].total_us, 150);
  EXPECT_DOUBLE_EQ(s.ops[0].share, 150.0 / 330);
  EXPECT_EQ(s.ops[1].type, "add");
  EXPECT_EQ(s.ops[2].type, "allreduce");
  EXPECT_EQ(s.ops[3].type, "matmul");

  ASSERT_TRUE(s.iterations.has_value());
  EXPECT_EQ(s.iterations->count, 3);
  EXPECT_DOUBLE_EQ(s.iterations->median_us, 120);
  EXPECT_DOUBLE_EQ(s.iterations->max_us, 150);
}

TEST(TraceSummaryTest, CriticalPathDefaultsToTheMedianIteration) {
  Summary s = Summarize(DiamondParsed(), {});
  ASSERT_TRUE(s.critical_path.has_value()) << s.critical_path_note;
  EXPECT_EQ(s.critical_path->iteration, 2);
  EXPECT_EQ(PathNodes(*s.critical_path), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(s.critical_path->length_us, 90);

  SummaryOptions options;
  options.iteration = 1;
  options.path_requested = true;
  s = Summarize(DiamondParsed(), options);
  EXPECT_EQ(s.critical_path->iteration, 1);

  options.iteration = 5;
  EXPECT_TRUE(Contains(ErrorOf([&] { Summarize(DiamondParsed(), options); }, ErrorCode::kNotFound),
                       "no kernels of graph 0 in iteration 5"));
  options.iteration = kNone;
  options.graph = 3;
  EXPECT_TRUE(Contains(ErrorOf([&] { Summarize(DiamondParsed(), options); }, ErrorCode::kNotFound),
                       "diamond.json: no graph 3"));
}

TEST(TraceSummaryTest, PlainChromeTraceHasNoCriticalPath) {
  const json plain = json::array({{{"ph", "X"},
                                   {"cat", "kernel"},
                                   {"name", "k"},
                                   {"pid", 0},
                                   {"tid", 1},
                                   {"ts", 5},
                                   {"dur", 10}}});
  const Summary s = Summarize(ParseTrace(plain.dump(), "plain.json"), {});
  EXPECT_FALSE(s.critical_path.has_value());
  EXPECT_TRUE(Contains(s.critical_path_note, "no graph 0")) << s.critical_path_note;
  EXPECT_DOUBLE_EQ(s.lanes.at(0).utilisation, 1);
}

TEST(TraceSummaryTest, TextAndJsonOutputs) {
  const Summary s = Summarize(DiamondParsed(), {});
  std::ostringstream text;
  WriteSummaryText(s, 2, text);
  EXPECT_TRUE(Contains(text.str(),
                       "critical path: 0.090 ms over 3 ops (75.0% of the iteration's 0.120 ms); "
                       "kernels 0.080 ms, waits 0.010 ms"))
      << text.str();
  EXPECT_TRUE(Contains(text.str(), "stream 0.1")) << text.str();
  EXPECT_TRUE(Contains(text.str(), "lanes by busy time (2 of 5)")) << text.str();

  const json j = SummaryToJson(s, 2);
  for (const char* key : {"file", "events", "dropped_events", "inputs", "start_us", "end_us",
                          "span_us", "kernel_us", "lanes", "streams", "messages", "waits", "ops",
                          "op_types", "iterations", "critical_path"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["ops"].size(), 2u);
  EXPECT_EQ(j["op_types"], 4);
  EXPECT_EQ(j["lanes"].size(), 5u);  // every lane
  EXPECT_EQ(j["streams"][1]["name"], "stream 0.1");
  const json& path = j["critical_path"];
  EXPECT_EQ(path["iteration"], 2);
  EXPECT_EQ(path["length_us"], 90);
  EXPECT_EQ(path["iteration_us"], 120);
  EXPECT_EQ(path["kernels_us"], 80);
  EXPECT_EQ(path["waits_us"], 10);
  ASSERT_EQ(path["nodes"].size(), 3u);
  EXPECT_EQ(path["nodes"][2]["node"], 4);
  EXPECT_EQ(path["nodes"][2]["wait_us"], 5);
  EXPECT_EQ(path["nodes"][2]["via"], "edge");
  EXPECT_EQ(path["stream_order"], true);  // the default; the diamond has no stream hold-up
  EXPECT_EQ(j["waits"][0]["mean_us"], 6);
}

// Two iterations on two places, times by hand (µs):
//   iteration 0 [0, 100): place 0 kernels [10, 50) and [45, 70) (overlapping
//     streams: one busy span [10, 70)), place 1 [20, 40) and a merge chunk
//     [60, 80): both places [20, 40) and [60, 70) = 30; one place [10, 20),
//     [40, 60), [70, 80) = 40; none inside [10, 80): 0; before 10, after 20.
//   gap [100, 130) = 30 (the driver).
//   iteration 1 [130, 200): place 0 [140, 150), place 1 [160, 190):
//     both 0, one 40, none [150, 160) = 10; before 10, after 10.
//   A third iteration (index 3) after a missing one: its gap is not counted.
TEST(TraceSummaryTest, TimeSplitCutsIterationsByPlacesComputing) {
  json events = json::array();
  const auto iteration = [&](int index, double ts, double dur) {
    events.push_back(Complete("iteration", "iteration " + std::to_string(index), kDriver, 0, ts,
                              dur, {{"graph", 0}, {"iteration", index}}));
  };
  iteration(0, 0, 100);
  events.push_back(Kernel(kOpA, 1, "mul", 1, 0, 0, 0, 10, 40));
  events.push_back(Kernel(kOpB, 1, "relu", 2, 0, 1, 0, 45, 25));
  events.push_back(Kernel(kOpC, 2, "mul", 1, 1, 0, 0, 20, 20));
  json chunk = Kernel(kOpC, 2, "allreduce", 3, 1, 0, 0, 60, 20);
  chunk["name"] = "allreduce chunk";
  events.push_back(chunk);
  events.push_back(Complete("wait", "barrier", kBarrier, 2, 40, 20,
                            {{"graph", 0}, {"iteration", 0}, {"place", 1}}));
  iteration(1, 130, 70);
  events.push_back(Kernel(kOpA, 1, "mul", 1, 0, 0, 1, 140, 10));
  events.push_back(Kernel(kOpC, 2, "mul", 1, 1, 0, 1, 160, 30));
  iteration(3, 500, 10);
  events.push_back(Kernel(kOpA, 1, "mul", 1, 0, 0, 3, 502, 6));
  events.push_back(Kernel(kOpC, 2, "mul", 1, 1, 0, 3, 502, 6));
  events.push_back(Kernel(kOpA, 1, "mul", 1, 0, 0, 7, 900, 5));  // no such iteration traced
  const json doc = {{"traceEvents", events}};
  const std::optional<ParallelSplit> t = SplitParallelTime(ParseTrace(doc.dump(), "split.json"), 0);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->iterations, 3);
  EXPECT_EQ(t->places, 2);
  EXPECT_DOUBLE_EQ(t->all_places_us, 30 + 0 + 6);
  EXPECT_DOUBLE_EQ(t->some_places_us, 40 + 40);
  EXPECT_DOUBLE_EQ(t->no_place_us, 0 + 10);
  EXPECT_DOUBLE_EQ(t->before_first_us, 10 + 10 + 2);
  EXPECT_DOUBLE_EQ(t->after_last_us, 20 + 10 + 2);
  EXPECT_DOUBLE_EQ(t->between_us, 30);
  EXPECT_DOUBLE_EQ(t->total_us, 100 + 30 + 70 + 10);
  EXPECT_DOUBLE_EQ(t->kernel_us, 40 + 25 + 20 + 20 + 10 + 30 + 6 + 6);
  EXPECT_DOUBLE_EQ(t->merge_us, 20);
  EXPECT_DOUBLE_EQ(t->barrier_us, 20);
  EXPECT_NEAR(t->serial_fraction(), 1 - 36.0 / 210.0, 1e-12);
  EXPECT_FALSE(SplitParallelTime(ParseTrace(doc.dump(), "split.json"), 5).has_value());

  const Summary s = Summarize(ParseTrace(doc.dump(), "split.json"), {});
  std::ostringstream text;
  WriteSummaryText(s, 10, text);
  EXPECT_NE(text.str().find("time split of graph 0: 3 iterations on 2 places"), std::string::npos)
      << text.str();
  EXPECT_DOUBLE_EQ(SummaryToJson(s, 10)["time_split"]["between_us"].get<double>(), 30);
}

TEST(TraceFileTest, MalformedInputFailsNamingTheFile) {
  std::string message = ErrorOf(
      [] { ParseTrace("{\"traceEvents\": [\n  {\"ph\": }]}", "bad.json"); }, ErrorCode::kParse);
  EXPECT_TRUE(Contains(message, "bad.json: invalid JSON at byte")) << message;
  EXPECT_TRUE(Contains(message, "line 2")) << message;
  message = ErrorOf([] { ParseTrace("{\"events\": []}", "x.json"); }, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(message, "x.json: not a trace file: no traceEvents")) << message;
  message =
      ErrorOf([] { ParseTrace("{\"traceEvents\": 3}", "x.json"); }, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(message, "not an array")) << message;
  message = ErrorOf([] { ParseTrace("42", "x.json"); }, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(message, "got a number")) << message;
  message = ErrorOf([] { ParseTrace(R"({"traceEvents": [{"ph": "X", "ts": "soon"}]})", "x.json"); },
                    ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(message, "traceEvents[0].ts is not a number")) << message;
  message = ErrorOf([] { LoadTrace("/nonexistent/trace.json"); }, ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(message, "/nonexistent/trace.json")) << message;
}

TEST(TraceMergeTest, AlignsClocksAndKeepsIdsUnique) {
  constexpr int64_t kBase = 1795000000000000000;
  // A's clock reads 0.5 ms late and its peer estimate moves it 0.1 ms back:
  // it starts 400 µs after B.
  const json a = DiamondTrace("hostA:1", kBase + 500000, -100000);
  const json b = DiamondTrace("hostB:2", kBase, 0);
  const json merged = MergeTraces({a, b}, {"a.json", "b.json"});

  EXPECT_EQ(merged["rill"]["node"], "merged");
  EXPECT_EQ(merged["rill"]["inputs"], json::array({"hostA:1", "hostB:2"}));
  EXPECT_EQ(merged["rill"]["clock"]["origin_wall_ns"].get<int64_t>(), kBase);
  EXPECT_EQ(merged["rill"]["dropped_events"], 2);
  const json& events = merged["traceEvents"];
  ASSERT_EQ(events.size(), 2 * a["traceEvents"].size());
  const size_t half = a["traceEvents"].size();
  std::set<std::pair<int64_t, int64_t>> lanes_a, lanes_b;
  std::multiset<int64_t> flow_ids;
  for (size_t i = 0; i < half; ++i) {
    const json& from_a = events[i];
    const json& from_b = events[half + i];
    const json& original = a["traceEvents"][i];
    if (original["ph"] != "M") {
      EXPECT_DOUBLE_EQ(from_a["ts"].get<double>(), original["ts"].get<double>() + 400);
      EXPECT_DOUBLE_EQ(from_b["ts"].get<double>(), original["ts"].get<double>());
    }
    EXPECT_EQ(from_a["pid"], original["pid"]);
    EXPECT_EQ(from_b["pid"], original["pid"].get<int>() + 1000);
    if (original["ph"] == "M" && original["name"].get<std::string>().rfind("process_", 0) == 0) {
      EXPECT_EQ(from_b["tid"], from_b["pid"]);  // a process's metadata: on tid == pid
    } else {
      EXPECT_EQ(from_b["tid"], original["tid"].get<int>() + 100000);
    }
    lanes_a.insert({from_a["pid"].get<int64_t>(), from_a["tid"].get<int64_t>()});
    lanes_b.insert({from_b["pid"].get<int64_t>(), from_b["tid"].get<int64_t>()});
    if (original.contains("args") && original["args"].contains("graph")) {
      EXPECT_EQ(from_b["args"]["graph"], 1000);
    }
    if (original["ph"] == "s") {
      EXPECT_EQ(from_b["args"]["from"], original["args"]["from"].get<int>() + 100000);
      EXPECT_EQ(from_b["args"]["to"], original["args"]["to"].get<int>() + 100000);
    }
    if (original.contains("id")) {
      flow_ids.insert(from_a["id"].get<int64_t>());
      flow_ids.insert(from_b["id"].get<int64_t>());
    }
  }
  for (const auto& lane : lanes_a) EXPECT_EQ(lanes_b.count(lane), 0u);
  // Each id is one s/f pair: twice, and never shared between inputs.
  for (int64_t id : flow_ids) EXPECT_EQ(flow_ids.count(id), 2u) << id;
  EXPECT_EQ(events[1]["args"]["name"], "hostA:1: place 0 (cpu:0)");
  EXPECT_EQ(events[half + 1]["args"]["name"], "hostB:2: place 0 (cpu:0)");

  const json& graphs = merged["rill"]["graphs"];
  ASSERT_EQ(graphs.size(), 2u);
  EXPECT_EQ(graphs[1]["id"], 1000);
  EXPECT_EQ(graphs[1]["driver_lane"], kDriver + 100000);
  EXPECT_EQ(graphs[1]["parent_lane"], -1);
  EXPECT_EQ(graphs[1]["nodes"][0]["tid"], kOpA + 100000);
  EXPECT_EQ(merged["rill"]["lanes"].size(), 8u);
  EXPECT_EQ(merged["rill"]["lanes"][4]["tid"], kDriver + 100000);
  EXPECT_EQ(merged["rill"]["lanes"][4]["pid"], 0 + 1000);

  // The merged file summarizes like its inputs: B's graph is graph 1000.
  SummaryOptions options;
  options.graph = 1000;
  options.path_requested = true;
  const Summary s = Summarize(ParseTrace(merged.dump(), "merged.json"), options);
  ASSERT_TRUE(s.critical_path.has_value());
  EXPECT_EQ(PathNodes(*s.critical_path), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(s.critical_path->length_us, 90);
  EXPECT_EQ(s.lanes.size(), 10u);
  EXPECT_EQ(s.waits.size(), 4u);  // each input's places apart
  EXPECT_EQ(s.messages[0].count, 4);
}

TEST(TraceMergeTest, InputWithoutClockFails) {
  json a = DiamondTrace();
  a.erase("rill");
  const std::string message = ErrorOf(
      [&] {
        MergeTraces({a, DiamondTrace()}, {"a.json", "b.json"});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(message, "a.json: no rill.clock.origin_wall_ns")) << message;
}

class TraceViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("trace_view_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::ofstream((dir_ / name).string(), std::ios::binary) << contents;
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST_F(TraceViewTest, EmbedsTheTraceWithScriptEndsEscaped) {
  const std::string page_template =
      std::string("<html><body>") + kTraceSlot + "<script>main()</script></body></html>";
  json trace = DiamondTrace();
  trace["traceEvents"][0]["args"]["name"] = "</script><!--<script>";
  const std::string trace_text = trace.dump();
  const std::string tpl = Write("index.html", page_template);
  const std::string trace_path = Write("t.json", trace_text);
  const std::string out = (dir_ / "t.html").string();
  WriteTraceView(trace_path, tpl, out);

  std::ifstream in(out, std::ios::binary);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string open = R"(<script id="rill-trace" type="application/json">)";
  const size_t begin = page.find(open) + open.size();
  const size_t end = page.find("</script>", begin);
  ASSERT_NE(end, std::string::npos);
  const std::string embedded = page.substr(begin, end - begin);
  EXPECT_FALSE(Contains(embedded, "</")) << embedded;
  EXPECT_FALSE(Contains(embedded, "<!--")) << embedded;
  EXPECT_EQ(json::parse(embedded), trace);  // the escapes read back as the same text
  EXPECT_EQ(page.substr(end), "</script><script>main()</script></body></html>");
  EXPECT_EQ(page.substr(0, 12), "<html><body>");
}

TEST_F(TraceViewTest, TemplateAndTraceProblemsFail) {
  const std::string trace_path = Write("t.json", DiamondTrace().dump());
  const std::string out = (dir_ / "t.html").string();
  std::string message =
      ErrorOf([&] { WriteTraceView(trace_path, (dir_ / "missing.html").string(), out); },
              ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(message, "cmake --build build --target visualizer")) << message;
  message = ErrorOf([&] { WriteTraceView(trace_path, Write("plain.html", "<html/>"), out); },
                    ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(message, "plain.html: not a visualizer page")) << message;
  const std::string twice = Write("twice.html", std::string(kTraceSlot) + kTraceSlot);
  message = ErrorOf([&] { WriteTraceView(trace_path, twice, out); }, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(message, "more than one")) << message;
  const std::string tpl = Write("index.html", kTraceSlot);
  message = ErrorOf([&] { WriteTraceView(Write("bad.json", "{"), tpl, out); }, ErrorCode::kParse);
  EXPECT_TRUE(Contains(message, "bad.json")) << message;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace rill::trace
