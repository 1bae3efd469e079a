// The actor executor against the sequential reference executor on the
// Fashion-MNIST models, in one command: training samples/s (forward +
// backward + Adam on preloaded random batches) and peak memory, each
// configuration in its own child process.
//
// Usage: executor_benchmark [seconds per measurement, default 3] [rounds, default 3]
// The configurations are measured in turn, round after round, and each one's
// median over the rounds is reported, so that drift in the machine's speed
// during the run hits every configuration alike.
// Prints one line per configuration and the ratios the issues ask for:
//   MLP, batch 64, one thread: actor / sequential (target >= 0.95)
//   CNN, batch 64, two threads: actor / sequential (target > 1)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "runtime/core/buffer_pool.h"
#include "runtime/device/blas_threads.h"
#include "tools/bench/in_child.h"
#include "tools/bench/random_batches.h"
#include "tools/rill/models.h"

using namespace rill;

namespace {

struct Config {
  const char* model;
  int batch;
  const char* executor;  // "sequential" or "actor"
  int threads;           // actor: executor threads; sequential: 1
  int blas_threads;
};

struct Result {
  double samples_per_sec = 0;
  double peak_rss_mib = 0;
  double peak_tensor_mib = 0;  // buffers in use at the peak (BufferPool)
};

Result Measure(const Config& c, double seconds) {
  Program main, startup;
  Builder b(&main, &startup, 0);
  cli::Classifier model = cli::BuildClassifier(b, c.model);
  Adam(1e-3f).Minimize(b, model.loss);
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  const auto batches = bench::RandomBatches(model, c.batch, 8);
  std::unique_ptr<PreparedBlock> prepared;
  std::unique_ptr<ParallelExecutor> actors;
  if (std::string(c.executor) == "actor") {
    ExecutionStrategy strategy;
    strategy.num_threads = c.threads;
    strategy.blas_threads = c.blas_threads;
    actors = std::make_unique<ParallelExecutor>(main.desc(), &scope,
                                                ParallelExecutor::Options{.strategy = strategy});
  } else {
    SetBlasThreads(c.blas_threads);
    prepared = exe.Prepare(main.desc(), &scope);
  }
  auto step = [&](int i) {
    const FeedList& feeds = batches[static_cast<size_t>(i) % batches.size()];
    if (actors) {
      actors->Run(feeds, {model.loss.name});
    } else {
      exe.Run(*prepared, feeds, {model.loss.name});
    }
  };
  for (int i = 0; i < 5; ++i) step(i);  // warm-up: buffers allocated, caches filled
  BufferPool::Instance().ResetPeak();
  int64_t steps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    step(static_cast<int>(steps++));
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  Result r;
  r.samples_per_sec = static_cast<double>(steps * c.batch) / elapsed;
  r.peak_rss_mib = bench::PeakRssMiB();
  r.peak_tensor_mib =
      static_cast<double>(BufferPool::Instance().Stats().peak_in_use_bytes) / (1 << 20);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const std::vector<Config> configs = {
      {"mlp", 64, "sequential", 1, 1}, {"mlp", 64, "actor", 1, 1}, {"cnn", 64, "sequential", 1, 1},
      {"cnn", 64, "sequential", 1, 2}, {"cnn", 64, "actor", 1, 1}, {"cnn", 64, "actor", 2, 1},
  };
  std::vector<std::vector<Result>> runs(configs.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < configs.size(); ++i) {
      runs[i].push_back(bench::InChild([&] { return Measure(configs[i], seconds); }));
    }
  }
  std::vector<Result> results;
  std::printf("%-5s %5s %-10s %7s %5s %12s %13s %13s\n", "model", "batch", "executor", "threads",
              "blas", "samples/s", "peak RSS MiB", "tensors MiB");
  for (size_t i = 0; i < configs.size(); ++i) {
    auto& r = runs[i];
    std::sort(r.begin(), r.end(), [](const Result& a, const Result& b) {
      return a.samples_per_sec < b.samples_per_sec;
    });
    results.push_back(r[r.size() / 2]);
    const Config& c = configs[i];
    std::printf("%-5s %5d %-10s %7d %5d %12.0f %13.1f %13.1f\n", c.model, c.batch, c.executor,
                c.threads, c.blas_threads, results[i].samples_per_sec, results[i].peak_rss_mib,
                results[i].peak_tensor_mib);
  }
  std::printf("MLP batch 64, 1 thread: actor / sequential = %.3f (target >= 0.95)\n",
              results[1].samples_per_sec / results[0].samples_per_sec);
  std::printf("CNN batch 64: actor 2 threads / sequential 1 thread = %.3f (target > 1)\n",
              results[5].samples_per_sec / results[2].samples_per_sec);
  std::printf("CNN batch 64: actor 2 threads / sequential with 2 BLAS threads = %.3f\n",
              results[5].samples_per_sec / results[3].samples_per_sec);
  std::printf("peak tensor memory, actor / sequential: MLP %.2f, CNN %.2f\n",
              results[1].peak_tensor_mib / results[0].peak_tensor_mib,
              results[4].peak_tensor_mib / results[2].peak_tensor_mib);
  return 0;
}
