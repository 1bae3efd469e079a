// rill bench dag: per-node cost of running graphs of tiny ops through a plain
// sequential loop (the reference executor), the actor executor and oneTBB's
// flow graph, all calling the same kernels, in one process.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "actors/executor/graph_of.h"
#include "rill/executor.h"
#include "rill/parallel_executor.h"
#include "runtime/device/blas_threads.h"
#include "tools/bench/in_child.h"
#include "tools/rill/commands.h"
#include "tools/rill/dag_programs.h"
#include "tools/rill/flags.h"
#include "tools/rill/tbb_flow_dag.h"

namespace rill::cli {
namespace {

using Clock = std::chrono::steady_clock;

int64_t DefaultNodes(const std::string& shape) {
  if (shape == "chain") return 100000;
  if (shape == "fanout") return 10000;
  if (shape == "grid") return 90000;
  return 50000;
}

// Median seconds of `repeat` calls of f, after two warm-up calls.
template <class F>
double MedianSeconds(int repeat, F f) {
  f();
  f();
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const auto start = Clock::now();
    f();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct DagResult {
  std::string shape;
  int64_t nodes = 0;
  int threads = 0;
  double build_ms = 0;       // ProgramDesc to running actors
  double sequential_ns = 0;  // per node
  double actor_ns = 0;
  double tbb_ns = 0;
  BuildTimes build_split = {};  // build_ms, step by step, as the executor timed it
};

// One runner's median ns per node and the value of the last node. Each is
// measured in a child process (bench::InChild): with 100k-op graphs, where
// kernel contexts land in memory decides much of the per-node cost, so every
// runner starts from the same, unfragmented heap.
struct Measurement {
  double ns_per_node = 0;
  double output = 0;
  double build_ms = 0;
  BuildTimes build_split = {};
};

DagResult MeasureDag(const std::string& shape, int64_t nodes, int threads, int repeat) {
  DagResult r{shape, nodes, threads};
  const proto::ProgramDesc program = MakeDagProgram(shape, nodes);
  const std::string out = DagOutputName(program);
  const double n = static_cast<double>(nodes);

  const Measurement seq = bench::InChild([&] {
    Scope scope;
    Executor exe;
    auto prepared = exe.Prepare(program, &scope);
    Measurement m;
    m.ns_per_node = MedianSeconds(repeat, [&] { exe.Run(*prepared); }) * 1e9 / n;
    m.output = scope.GetTensor(out).GetAsDouble(0);
    return m;
  });
  const Measurement actor = bench::InChild([&] {
    Scope scope;
    ExecutionStrategy strategy;
    strategy.num_threads = threads;
    strategy.blas_threads = 1;
    const auto start = Clock::now();
    ParallelExecutor exe(program, &scope, {.strategy = strategy});
    Measurement m;
    m.build_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    m.build_split = BuildTimesOf(exe);
    m.ns_per_node = MedianSeconds(repeat, [&] { exe.Run({}); }) * 1e9 / n;
    m.output = scope.GetTensor(out).GetAsDouble(0);
    return m;
  });
  const Measurement tbb = bench::InChild([&] {
    const auto predecessors = DagPredecessors(program);
    Scope scope;
    Executor exe;
    auto prepared = exe.Prepare(program, &scope);
    TbbFlowDag dag(predecessors, *prepared, threads);
    Measurement m;
    m.ns_per_node = MedianSeconds(repeat, [&] { dag.Run(); }) * 1e9 / n;
    m.output = scope.GetTensor(out).GetAsDouble(0);
    return m;
  });
  RILL_CHECK(actor.output == seq.output && tbb.output == seq.output, kInternal,
             "results differ on ", shape, ": sequential ", seq.output, ", actor ", actor.output,
             ", tbb ", tbb.output);
  r.build_ms = actor.build_ms;
  r.build_split = actor.build_split;
  r.sequential_ns = seq.ns_per_node;
  r.actor_ns = actor.ns_per_node;
  r.tbb_ns = tbb.ns_per_node;
  return r;
}

std::vector<int> ParseThreads(const std::string& text) {
  std::vector<int> threads;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const int t = std::atoi(part.c_str());
    RILL_CHECK(t >= 1 && t <= 256, kInvalidArgument, "bad thread count \"", part, "\"");
    threads.push_back(t);
  }
  return threads;
}

struct DagFlags {
  std::string shape = "all";
  int64_t nodes = 0;  // 0: the shape's default
  std::string threads = "1,2";
  int repeat = 7;
  bool json = false;
};

// `value` rounded to `decimals` places, for the JSON lines.
double Round(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

// Milliseconds with one decimal, for the text table.
std::string FormatMs(double ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", ms);
  return text;
}

// One step of building the actor executor and its time.
struct BuildStep {
  const char* name;
  double ms;
};

// The steps of a build in the order they run; "other" is what the
// constructor spent outside them, so that the steps sum to build_ms.
std::vector<BuildStep> BuildSteps(const DagResult& r) {
  const BuildTimes& t = r.build_split;
  return {{"runtime", t.runtime_ms},   {"validate", t.validate_ms},
          {"plan", t.plan_ms},         {"scopes", t.scopes_ms},
          {"contexts", t.contexts_ms}, {"graph", t.graph_ms},
          {"nodes", t.nodes_ms},       {"tasks", t.tasks_ms},
          {"actors", t.actors_ms},     {"other", r.build_ms - t.total_ms()}};
}

void PrintJson(const DagResult& r) {
  nlohmann::ordered_json split = nlohmann::ordered_json::object();
  for (const BuildStep& step : BuildSteps(r)) split[step.name] = Round(step.ms, 1);
  const nlohmann::ordered_json line = {{"shape", r.shape},
                                       {"nodes", r.nodes},
                                       {"threads", r.threads},
                                       {"build_ms", Round(r.build_ms, 1)},
                                       {"build_split_ms", split},
                                       {"sequential_ns_per_node", Round(r.sequential_ns, 1)},
                                       {"actor_ns_per_node", Round(r.actor_ns, 1)},
                                       {"tbb_ns_per_node", Round(r.tbb_ns, 1)},
                                       {"actor_over_tbb", Round(r.actor_ns / r.tbb_ns, 3)}};
  std::printf("%s\n", line.dump().c_str());
}

void PrintText(const DagResult& r) {
  std::printf("%-7s %7lld %7d %10.1f %12.1f %12.1f %12.1f %10.3f\n", r.shape.c_str(),
              static_cast<long long>(r.nodes), r.threads, r.build_ms, r.sequential_ns, r.actor_ns,
              r.tbb_ns, r.actor_ns / r.tbb_ns);
  std::string split;
  for (const BuildStep& step : BuildSteps(r)) {
    split += StrCat(split.empty() ? "" : ", ", step.name, " ", FormatMs(step.ms));
  }
  std::printf("  build ms: %s\n", split.c_str());
}

int DagBench(const DagFlags& flags) {
  const std::vector<int> threads = ParseThreads(flags.threads);
  std::vector<std::string> shapes = {flags.shape};
  if (flags.shape == "all") shapes = {"chain", "fanout", "grid", "random"};
  SetBlasThreads(1);
  if (!flags.json) {
    std::printf("%-7s %7s %7s %10s %12s %12s %12s %10s\n", "shape", "nodes", "threads", "build ms",
                "seq ns/node", "actor ns/n", "tbb ns/node", "actor/tbb");
  }
  for (const auto& s : shapes) {
    for (int t : threads) {
      const DagResult r =
          MeasureDag(s, flags.nodes > 0 ? flags.nodes : DefaultNodes(s), t, flags.repeat);
      if (flags.json) {
        PrintJson(r);
      } else {
        PrintText(r);
      }
      std::fflush(stdout);
    }
  }
  return kExitOk;
}

}  // namespace

Command AddBenchCommand(CLI::App& rill) {
  CLI::App* app =
      rill.add_subcommand("bench", "benchmarks of the executors")->require_subcommand(1);
  auto flags = std::make_shared<DagFlags>();
  CLI::App* dag = app->add_subcommand("dag", "executor cost per node: sequential, actor, oneTBB");
  dag->add_option("--shape", flags->shape, "chain, fanout, grid, random or all")->type_name("S");
  dag->add_option("--nodes", flags->nodes,
                  "node count (default per shape: chain 100000, fanout 10000,\n"
                  "grid 90000, random 50000)")
      ->type_name("N")
      ->default_str("");
  dag->add_option("--threads", flags->threads, "thread counts to measure, comma separated")
      ->type_name("T,...");
  dag->add_option("--repeat", flags->repeat, "timed runs per measurement; the median is reported")
      ->type_name("R")
      ->check(AtLeast(1));
  dag->add_flag("--json", flags->json, "one JSON object per (shape, threads) on stdout");
  dag->footer(
      "Runs graphs of tiny ops (one float each) through a plain sequential loop,\n"
      "the actor executor and oneTBB's flow graph, and prints ns per node for each\n"
      "and the ratio actor / TBB (below 1: the actor executor costs less per node).\n"
      "Each runner is measured in its own child process, from the same heap.\n"
      "\"build ms\" is the actor executor's ProgramDesc-to-running-actors time; the\n"
      "line below each row splits it into the executor's build steps, as timed by\n"
      "the executor itself (JSON: build_split_ms): runtime (the CAF actor system),\n"
      "validate, plan (data-parallel plan, a copy of the program), scopes (scope\n"
      "variables), contexts (kernel contexts), graph (SSA graph), nodes (built\n"
      "graph and executor parts), tasks (per-slot tasks), actors (spawning), other\n"
      "(the rest of the constructor).");
  return {app, [flags] { return DagBench(*flags); }};
}

}  // namespace rill::cli
