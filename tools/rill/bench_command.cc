// rill bench dag: per-node cost of running graphs of tiny ops through a plain
// sequential loop (the reference executor), the actor executor and oneTBB's
// flow graph, all calling the same kernels, in one process.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

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

constexpr const char* kUsage =
    R"(usage: rill bench dag [--shape S] [--nodes N] [--threads T] [--repeat R] [--json]
  Runs graphs of tiny ops (one float each) through a plain sequential loop,
  the actor executor and oneTBB's flow graph, and prints ns per node for each
  and the ratio actor / TBB (below 1: the actor executor costs less per node).
  Each runner is measured in its own child process, from the same heap.
  "build ms" is the actor executor's ProgramDesc-to-running-actors time.
  --shape    chain, fanout, grid, random or all (default all)
  --nodes    node count (default per shape: chain 100000, fanout 10000,
             grid 90000, random 50000)
  --threads  thread counts to measure, comma separated (default 1,2)
  --repeat   timed runs per measurement; the median is reported (default 7)
  --json     one JSON object per (shape, threads) on stdout
)";

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
};

// One runner's median ns per node and the value of the last node. Each is
// measured in a child process (bench::InChild): with 100k-op graphs, where
// kernel contexts land in memory decides much of the per-node cost, so every
// runner starts from the same, unfragmented heap.
struct Measurement {
  double ns_per_node = 0;
  double output = 0;
  double build_ms = 0;
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

int DagBench(const std::vector<std::string>& args) {
  std::string shape = "all";
  int64_t nodes = 0;
  std::string threads_text = "1,2";
  int repeat = 7;
  bool json = false;
  Flags flags("rill bench dag", kUsage);
  flags.String("--shape", &shape);
  flags.Int64("--nodes", &nodes);
  flags.String("--threads", &threads_text);
  flags.Int("--repeat", &repeat);
  flags.Bool("--json", &json);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  if (repeat < 1) return flags.UsageError("--repeat must be >= 1");
  const std::vector<int> threads = ParseThreads(threads_text);
  std::vector<std::string> shapes = {shape};
  if (shape == "all") shapes = {"chain", "fanout", "grid", "random"};
  SetBlasThreads(1);
  if (!json) {
    std::printf("%-7s %7s %7s %10s %12s %12s %12s %10s\n", "shape", "nodes", "threads", "build ms",
                "seq ns/node", "actor ns/n", "tbb ns/node", "actor/tbb");
  }
  for (const auto& s : shapes) {
    for (int t : threads) {
      const DagResult r = MeasureDag(s, nodes > 0 ? nodes : DefaultNodes(s), t, repeat);
      if (json) {
        std::printf(
            "{\"shape\": \"%s\", \"nodes\": %lld, \"threads\": %d, \"build_ms\": %.1f, "
            "\"sequential_ns_per_node\": %.1f, \"actor_ns_per_node\": %.1f, "
            "\"tbb_ns_per_node\": %.1f, \"actor_over_tbb\": %.3f}\n",
            r.shape.c_str(), static_cast<long long>(r.nodes), r.threads, r.build_ms,
            r.sequential_ns, r.actor_ns, r.tbb_ns, r.actor_ns / r.tbb_ns);
      } else {
        std::printf("%-7s %7lld %7d %10.1f %12.1f %12.1f %12.1f %10.3f\n", r.shape.c_str(),
                    static_cast<long long>(r.nodes), r.threads, r.build_ms, r.sequential_ns,
                    r.actor_ns, r.tbb_ns, r.actor_ns / r.tbb_ns);
      }
      std::fflush(stdout);
    }
  }
  return kExitOk;
}

}  // namespace

int BenchCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] != "dag") {
    std::cerr << "rill bench: unknown benchmark '" << args[0] << "'\n" << kUsage;
    return kExitUsage;
  }
  return DagBench(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace rill::cli
