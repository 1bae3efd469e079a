// The trace recorder: a traced iteration of a known program records exactly
// one readiness message per edge of its graph (data and control counted
// apart), one kernel per op, the chunk messages and barrier waits of gradient
// merges, wakes paired with their receipt, channel waits; the JSON follows
// the trace-event format; buffers are bounded; nothing is recorded while off.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "actors/executor/graph_of.h"
#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/trace_recorder.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using json = nlohmann::json;
using testing::RandomTensor;
constexpr DataType kF64 = DataType::kFloat64;

struct Mlp {
  Program main, startup;
  Var loss;
  Mlp() {
    Builder b(&main, &startup, 3);
    Var x = b.Data("x", {-1, 10}, kF64);
    Var label = b.Data("label", {-1, 1}, DataType::kInt64);
    Var h = b.Fc(b.Fc(x, 12, Activation::kRelu), 8, Activation::kTanh);
    loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
    Adam(0.01f).Minimize(b, loss);
  }
};

FeedList Batch(int step, int64_t rows) {
  Tensor y(DataType::kInt64, {rows, 1});
  for (int64_t i = 0; i < rows; ++i) y.mutable_data<int64_t>()[i] = (i + step) % 4;
  return {{"x", RandomTensor({rows, 10}, 90 + step)}, {"label", y}};
}

// The graph's op-to-op edges, split by whether a variable's value travels on them.
struct EdgeCounts {
  int64_t data = 0;
  int64_t control = 0;
};
EdgeCounts CountEdges(const SsaGraph& graph) {
  EdgeCounts counts;
  for (const OpNode& op : graph.ops) {
    for (int to : op.successors) {
      bool data = false;
      for (int out : op.outputs) {
        const VarNode& var = graph.vars[out];
        data |= !var.control &&
                std::find(var.consumers.begin(), var.consumers.end(), to) != var.consumers.end();
      }
      ++(data ? counts.data : counts.control);
    }
  }
  return counts;
}

json Export(const TraceRecorder& trace) {
  std::ostringstream out;
  trace.WriteJson(out);
  return json::parse(out.str());  // throws on malformed JSON
}

// Checks the trace-event format: required keys and types per phase, every
// tid named, flows paired (f after s, same kind), X durations non-negative.
void CheckFormat(const json& trace) {
  ASSERT_TRUE(trace.is_object());
  ASSERT_TRUE(trace.at("traceEvents").is_array());
  std::set<int64_t> named;
  std::map<int64_t, json> starts, finishes;
  for (const json& e : trace["traceEvents"]) {
    const std::string ph = e.at("ph");
    ASSERT_TRUE(e.at("pid").is_number_integer()) << e;
    if (ph == "M") {
      const std::string name = e.at("name");
      EXPECT_TRUE(e.at("args").is_object()) << e;
      if (name == "thread_name") named.insert(e.at("tid").get<int64_t>());
      continue;
    }
    ASSERT_TRUE(e.at("tid").is_number_integer()) << e;
    ASSERT_TRUE(e.at("ts").is_number()) << e;
    EXPECT_GE(e["ts"].get<double>(), 0) << e;
    EXPECT_TRUE(e.at("name").is_string()) << e;
    EXPECT_TRUE(e.at("cat").is_string()) << e;
    EXPECT_TRUE(e.at("args").contains("iteration")) << e;
    if (ph == "X") {
      EXPECT_GE(e.at("dur").get<double>(), 0) << e;
    } else if (ph == "s") {
      starts[e.at("id").get<int64_t>()] = e;
    } else if (ph == "f") {
      EXPECT_EQ(e.at("bp"), "e") << e;
      finishes[e.at("id").get<int64_t>()] = e;
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  EXPECT_EQ(starts.size(), finishes.size());
  for (const auto& [id, s] : starts) {
    ASSERT_TRUE(finishes.count(id)) << "flow " << id << " has no end";
    const json& f = finishes[id];
    EXPECT_EQ(s["name"], f["name"]);
    EXPECT_LE(s["ts"].get<double>(), f["ts"].get<double>());
    EXPECT_EQ(s["args"]["to"], f["tid"]);
    EXPECT_EQ(s["args"]["from"], s["tid"]);
  }
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "M") {
      EXPECT_TRUE(named.count(e["tid"].get<int64_t>())) << e;
    }
  }
  const json& rill = trace.at("rill");
  EXPECT_EQ(rill.at("format"), 1);
  EXPECT_TRUE(rill.at("clock").at("origin_wall_ns").is_number_integer());
  EXPECT_EQ(rill.at("lanes").size(), named.size());
}

// Events of `cat`/`name` ("" for any) in iteration `iteration` (-1: any).
int64_t Count(const json& trace, const std::string& ph, const std::string& cat,
              const std::string& name, int iteration = -1) {
  int64_t n = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != ph || e.value("cat", "") != cat) continue;
    if (!name.empty() && e["name"] != name) continue;
    if (iteration >= 0 && e["args"]["iteration"] != iteration) continue;
    ++n;
  }
  return n;
}

ExecutionStrategy Traced(std::shared_ptr<TraceRecorder> trace, int threads) {
  ExecutionStrategy strategy;
  strategy.num_threads = threads;
  strategy.stream_assignment = StreamAssignment::kRoundRobin;  // cross-stream messages and wakes
  strategy.trace = std::move(trace);
  return strategy;
}

// The trace of a two-stream executor whose runs have returned, exported once
// at most one wake per stream is unmatched. A stream records a wake's receipt
// when the drain it started ends, and that drain may still be running (the
// iteration it finished has already returned) while the next wake is sent:
// then a stream has two. An idle graph's drains end at once; this exports
// again until they have, for 5 s at most (then the caller's check fails).
constexpr int kWakesInFlight = 2;

json ExportOnceWakesSettle(const TraceRecorder& trace) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  json t = Export(trace);
  while (t["rill"]["unmatched_messages"].get<int>() > kWakesInFlight &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    t = Export(trace);
  }
  return t;
}

TEST(TraceTest, AnIterationRecordsOneMessagePerEdgeAndOneKernelPerOp) {
  Mlp m;
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  auto trace = std::make_shared<TraceRecorder>();
  ParallelExecutor exe(m.main.desc(), &scope, {.strategy = Traced(trace, 2)});
  constexpr int kIterations = 3;
  for (int i = 0; i < kIterations; ++i) exe.Run(Batch(i, 8), {m.loss.name});
  const json t = ExportOnceWakesSettle(*trace);
  CheckFormat(t);

  const SsaGraph& graph = GraphOf(exe);
  const EdgeCounts edges = CountEdges(graph);
  ASSERT_EQ(edges.data + edges.control, graph.EdgeCount());
  ASSERT_GT(edges.control, 0) << "the optimizer's writes order after the reads: control edges";
  for (int i = 0; i < kIterations; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(Count(t, "s", "message", "data", i), edges.data);
    EXPECT_EQ(Count(t, "s", "message", "control", i), edges.control);
    EXPECT_EQ(Count(t, "X", "kernel", "", i), static_cast<int64_t>(graph.ops.size()));
    EXPECT_EQ(Count(t, "X", "iteration", "", i), 1);
  }
  EXPECT_EQ(t["rill"]["dropped_events"], 0);
  // Only a wake can still be in flight when the file is written: one per stream at most.
  EXPECT_LE(t["rill"]["unmatched_messages"].get<int>(), kWakesInFlight);
  // The graph as exported matches the executor's.
  ASSERT_EQ(t["rill"]["graphs"].size(), 1u);
  const json& g = t["rill"]["graphs"][0];
  EXPECT_EQ(g["nodes"].size(), graph.ops.size());
  EXPECT_EQ(static_cast<int64_t>(g["edges"].size()), graph.EdgeCount());
  // Data messages carry their variable and its size.
  int64_t sized = 0;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] != "s" || e["name"] != "data") continue;
    EXPECT_FALSE(e["args"]["var"].get<std::string>().empty()) << e;
    sized += e["args"]["bytes"].get<int64_t>() > 0;
  }
  EXPECT_GT(sized, 0);
  // Every wake sent is received by its stream.
  EXPECT_EQ(Count(t, "s", "message", "wake"), Count(t, "f", "message", "wake"));
}

TEST(TraceTest, GradientMergesRecordChunksAndBarrierWaitsPerPlace) {
  Mlp m;
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  auto trace = std::make_shared<TraceRecorder>();
  ParallelExecutor exe(m.main.desc(), &scope,
                       {.places = ParsePlaces("cpu:2"), .strategy = Traced(trace, 2)});
  exe.Run(Batch(0, 8), {m.loss.name});
  exe.Run(Batch(1, 8), {m.loss.name});
  const json t = Export(*trace);
  CheckFormat(t);
  const int64_t collectives = exe.last_stats().collectives;
  ASSERT_GT(collectives, 0);
  const EdgeCounts edges = CountEdges(GraphOf(exe));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Count(t, "s", "message", "data", i) + Count(t, "s", "message", "control", i),
              GraphOf(exe).EdgeCount());
    EXPECT_EQ(Count(t, "s", "message", "data", i), edges.data);
    EXPECT_EQ(Count(t, "s", "message", "chunk", i), collectives * 2);
    EXPECT_EQ(Count(t, "X", "kernel", "allreduce chunk", i), collectives * 2);
    EXPECT_EQ(Count(t, "X", "wait", "barrier", i), collectives * 2);
  }
  std::set<int> places;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "barrier") places.insert(e["args"]["place"].get<int>());
  }
  EXPECT_EQ(places, (std::set<int>{0, 1}));
}

TEST(TraceTest, ChannelWaitsAreRecordedOnTheWaitingOp) {
  Program main, startup;
  Builder b(&main, &startup);
  Var done = b.MakeChannel({1}, DataType::kFloat32, 0);
  b.Go([&](Builder& b) { b.ChannelSend(done, b.Constant({1}, 1)); });
  auto [value, ok] = b.ChannelRecv(done);
  Scope scope;
  auto trace = std::make_shared<TraceRecorder>();
  ParallelExecutor exe(main.desc(), &scope, {.strategy = Traced(trace, 2)});
  exe.Run({}, {value.name});
  const json t = Export(*trace);
  CheckFormat(t);
  int64_t waits = 0;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] != "X" || e["name"] != "channel") continue;
    ++waits;
    EXPECT_EQ(e["args"]["what"], done.name);
  }
  EXPECT_EQ(waits, 1);  // the recv op's; the go block has no lane
}

TEST(TraceTest, NothingIsRecordedWhileOff) {
  Mlp m;
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  TraceRecorder::Options options;
  options.start_on = false;
  auto trace = std::make_shared<TraceRecorder>(options);
  ParallelExecutor exe(m.main.desc(), &scope, {.strategy = Traced(trace, 2)});
  exe.Run(Batch(0, 8), {m.loss.name});
  EXPECT_TRUE(trace->Events().empty());
  trace->Start();
  exe.Run(Batch(1, 8), {m.loss.name});
  trace->Stop();
  exe.Run(Batch(2, 8), {m.loss.name});
  const json t = Export(*trace);
  EXPECT_EQ(Count(t, "X", "iteration", ""), 1);
  EXPECT_EQ(Count(t, "X", "iteration", "", 1), 1);  // the second run, numbered from 0
}

TEST(TraceTest, BuffersAreBoundedAndCountWhatTheyDrop) {
  TraceRecorder::Options options;
  options.max_events = 5000;
  TraceRecorder trace(options);
  const int lane = trace.AddLane({1, "op", "op 0 test", 0, 0, 0});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        TraceEvent e;
        e.lane = lane;
        e.begin_ns = e.end_ns = TraceRecorder::Now();
        trace.Record(e);
      }
    });
  }
  for (auto& t : threads) t.join();
  const int64_t kept = static_cast<int64_t>(trace.Events().size());
  EXPECT_GE(kept, options.max_events);
  EXPECT_LT(kept, options.max_events + 4096);  // at most one chunk past the cap
  EXPECT_EQ(kept + trace.dropped(), 40000);
}

TEST(TraceTest, ParallelDoBlocksTraceTheirPlacesUnderTheirOp) {
  Program main, startup;
  Builder b(&main, &startup, 5);
  Var x = b.Data("x", {-1, 4}, kF64);
  Var per_row = b.ParallelDo(2, {x}, [&](Builder& inner) {
    return std::vector<Var>{inner.Fc(x, 3, Activation::kTanh)};
  })[0];
  Var loss = b.Mean(per_row);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  auto trace = std::make_shared<TraceRecorder>();
  ParallelExecutor exe(main.desc(), &scope, {.strategy = Traced(trace, 2)});
  exe.Run({{"x", RandomTensor({6, 4}, 1)}}, {loss.name});
  const json t = Export(*trace);
  CheckFormat(t);
  const json& graphs = t["rill"]["graphs"];
  ASSERT_EQ(graphs.size(), 3u);  // the program, and the block on each of its 2 places
  int64_t block_lane = -1;
  for (const json& lane : t["rill"]["lanes"]) {
    if (lane["graph"] == 0 &&
        lane["name"].get<std::string>().find("parallel_do") != std::string::npos) {
      block_lane = lane["tid"];
    }
  }
  EXPECT_EQ(graphs[1]["parent_lane"], block_lane);
  EXPECT_EQ(graphs[2]["parent_lane"], block_lane);
  EXPECT_EQ(Count(t, "X", "wait", "parallel block"), 2);
}

// Names come from program files: quotes, backslashes and control characters
// are escaped, bytes that are not UTF-8 become U+FFFD, and times keep their
// nanoseconds.
TEST(TraceTest, NamesAreEscapedAndTimesKeepNanoseconds) {
  TraceRecorder trace;
  const std::string name = "op \"q\" \\ \t\x01 \xff end";
  const int lane = trace.AddLane({1, "op", name, 0, 0, 0});
  TraceGraph graph;
  TraceGraph::Node node;
  node.type = name;
  node.lane = lane;
  graph.nodes.push_back(node);
  trace.AddGraph(graph);
  TraceEvent e;
  e.lane = lane;
  e.node = 0;
  e.iteration = 0;
  e.begin_ns = trace.origin_ns() + 1234567;
  e.end_ns = e.begin_ns + 1001;
  trace.Record(e);
  const json t = Export(trace);
  CheckFormat(t);
  const std::string expected = "op \"q\" \\ \t\x01 \xef\xbf\xbd end";  // U+FFFD in UTF-8
  EXPECT_EQ(t["rill"]["lanes"][0]["name"], expected);
  EXPECT_EQ(t["rill"]["graphs"][0]["nodes"][0]["type"], expected);
  ASSERT_EQ(Count(t, "X", "kernel", expected), 1);
  for (const json& event : t["traceEvents"]) {
    if (event["ph"] != "X") continue;
    EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 1234.567);
    EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 1.001);
  }
}

TEST(TraceTest, WritingToABadPathFailsWithTheName) {
  TraceRecorder trace;
  try {
    trace.WriteFile("/nonexistent-dir/trace.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/trace.json"), std::string::npos);
  }
}

// A window (WriteJson's since_ns) of a recorder shared by two executors: the
// iterations begun since, and only the executor that ran them, renumbered as
// in a recorder made for it alone.
TEST(TraceTest, AWindowHoldsItsIterationsAndOnlyTheExecutorsThatRanThem) {
  Mlp m;
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  auto shared = std::make_shared<TraceRecorder>(TraceRecorder::Options{.start_on = false});
  ExecutionStrategy strategy = Traced(shared, 2);
  const std::vector<Place> places = ParsePlaces("cpu:2");
  ParallelExecutor first(m.main.desc(), &scope, {.places = places, .strategy = strategy});
  ParallelExecutor second(m.main.desc(), &scope, {.places = places, .strategy = strategy});
  shared->Start();
  for (int i = 0; i < 2; ++i) first.Run(Batch(i, 8), {m.loss.name});
  shared->Stop();
  const int64_t since = TraceRecorder::Now();
  shared->Start();
  for (int i = 0; i < 3; ++i) second.Run(Batch(i, 8), {m.loss.name});
  shared->Stop();
  first.Run(Batch(5, 8), {m.loss.name});  // off: not recorded

  std::ostringstream out;
  shared->WriteJson(out, since);
  const json window = json::parse(out.str());
  CheckFormat(window);
  EXPECT_EQ(Count(window, "X", "iteration", ""), 3);
  for (const json& e : window["traceEvents"]) {
    if (e["ph"] != "M") {
      EXPECT_EQ(e["args"].value("graph", 0), 0) << e;
    }
  }
  const json whole = Export(*shared);
  EXPECT_EQ(Count(whole, "X", "iteration", ""), 5);
  EXPECT_EQ(whole["rill"]["graphs"].size(), 2u);

  auto alone = std::make_shared<TraceRecorder>();
  ParallelExecutor only(m.main.desc(), &scope, {.places = places, .strategy = Traced(alone, 2)});
  only.Run(Batch(0, 8), {m.loss.name});
  const json reference = Export(*alone);
  EXPECT_EQ(window["rill"]["lanes"], reference["rill"]["lanes"]);
  ASSERT_EQ(window["rill"]["graphs"].size(), 1u);
  EXPECT_EQ(window["rill"]["graphs"], reference["rill"]["graphs"]);
  EXPECT_EQ(Count(window, "X", "kernel", ""), 3 * Count(reference, "X", "kernel", ""));
}

}  // namespace
}  // namespace rill
