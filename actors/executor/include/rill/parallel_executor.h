// ParallelExecutor: the actor executor, as a trainer embeds it. It runs a
// program block out of order on a pool of threads: every op is a task with a
// countdown of the producers it waits for, every stream an actor that runs
// the tasks handed to it, and the results equal the sequential Executor's.
//
//   Executor().Run(startup, &scope);                      // parameters, once
//   ExecutionStrategy strategy = {};
//   strategy.num_threads = 2;
//   ParallelExecutor exe(main, &scope, {.strategy = strategy});
//   auto out = exe.Run({{"image", x}, {"label", y}}, {"loss"});
//   auto future = exe.RunAsync(feeds, {"loss"});        // returns at once
//
// Data parallelism: give several places ({.places = ParsePlaces("cpu:4")})
// and every place runs the program on its slice of each batch (fed variables
// declared with a batch dim -1 are split along dim 0, the first places taking
// one row more when it does not divide; other feeds go whole to every place).
// The gradients are merged after backward (BuildStrategy: kAllReduce keeps a
// parameter copy per place, kReduce one shared copy updated by its owner), so
// N places with batch B compute what one place computes with batch B, but for
// batch_norm: each place normalises its slice with the slice's statistics and
// keeps its own running statistics (runtime/graph/data_parallel.h).
// Fetches are merged: variables with a batch dim are concatenated, one-element
// values (losses) averaged weighted by each place's rows, anything else is
// place 0's (see MergeFor).
//
// Device places ("acpu:i", "cuda:i"): ops are launched on device streams with
// events between them (DependencyWait). On CUDA places the scope's
// parameters move to the device on the first run (read them back with
// Tensor::CopyTo), feeds are copied there through pinned buffers on the
// place's copy stream, fetches come back in host memory, and several CUDA
// places merge gradients with grouped NCCL allreduces (allreduce only).
//
// The graph is built and its actors spawned once, in the constructor.
// Run/RunAsync may be called from any thread; a failed iteration throws (or
// stores in the future) an Error naming block, op, type and place, and the
// executor stays usable. Destroying it while iterations run cancels them
// (their futures hold an Error with code kCancelled).
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "rill/build_strategy.h"
#include "rill/execution_strategy.h"
#include "rill/feeds.h"
#include "rill/iteration_stats.h"
#include "rill/place.h"
#include "rill/proto/program.pb.h"
#include "rill/runtime.h"
#include "rill/scope.h"

namespace rill {

class ActorGraph;
struct BuildTimes;
struct SsaGraph;

// What a ParallelExecutor runs on and how; every field has a default (an
// initializer each, so that -Wextra does not ask for the fields a designated
// initializer leaves out): name only what differs, in this order:
//   ParallelExecutor exe(main, &scope, {.places = ParsePlaces("cpu:2"), .strategy = s});
struct ParallelExecutorOptions {
  // Where the program runs: one place, or several for data parallelism.
  std::vector<Place> places = {Place::Cpu()};
  // How the graph runs: threads, iterations in flight, the watchdog, tracing.
  ExecutionStrategy strategy = {};
  // How the graph is built over several places: gradient merges and compression.
  BuildStrategy build = {};
  // The actor system and threads to run on, shared with other executors or a
  // TrainerClient. Null: the executor owns one with strategy.num_threads threads.
  std::shared_ptr<Runtime> runtime = nullptr;
  // The block to run (0: the main block).
  int block_index = 0;
};

class ParallelExecutor {
 public:
  using Options = ParallelExecutorOptions;

  // Builds the graph of options.block_index on options.places. `scope`
  // (parameters and other persistables, usually filled by the startup
  // program) must outlive the executor; under kAllReduce it holds place 0's
  // parameters.
  ParallelExecutor(const proto::ProgramDesc& program, Scope* scope, Options options = {});
  ~ParallelExecutor();
  ParallelExecutor(const ParallelExecutor&) = delete;
  ParallelExecutor& operator=(const ParallelExecutor&) = delete;

  // One iteration; the calling thread helps run it. Returns the fetched
  // tensors, which share memory with the scope until a later run replaces them.
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<std::string>& fetches = {});
  // Starts one iteration and returns its future; waits first while
  // max_iterations_in_flight iterations are running (backpressure).
  std::future<std::vector<Tensor>> RunAsync(const FeedList& feeds,
                                            const std::vector<std::string>& fetches = {});

  // After changing parameters in the scope (loading a checkpoint): copy them
  // to the other places (kAllReduce). Not while iterations run.
  void BroadcastParameters();

  // How a fetched variable's per-place values are merged.
  FetchMerge MergeFor(const std::string& name) const;
  // Counters of the last finished iteration (gradient merges and how many
  // of them overlapped backward).
  IterationStats last_stats() const;
  const ExecutionStrategy& strategy() const;
  // 1 for programs that carry state between iterations, else the strategy's value.
  int max_iterations_in_flight() const;
  Runtime& runtime() { return *runtime_; }

  // Test hook: these feeds are never delivered, as if their producer died
  // (the watchdog then reports the waiting ops); {} delivers all again.
  void WithholdFeedsForTesting(const std::vector<std::string>& names);

 private:
  // The graph the executor runs and how long building it took
  // (actors/executor/graph_of.h; for tests and tools).
  friend const SsaGraph& GraphOf(const ParallelExecutor& executor);
  friend BuildTimes BuildTimesOf(const ParallelExecutor& executor);

  std::shared_ptr<Runtime> runtime_;  // declared first: destroyed after the graph
  std::shared_ptr<ActorGraph> graph_;
  double runtime_ms_ = 0;  // making the runtime, when the executor owns it
};

}  // namespace rill
