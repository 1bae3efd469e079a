// What tracing costs: MLP training steps (forward, backward, Adam) with the
// actor executor, in three configurations run in turn in one process — no
// recorder, a recorder that is off, a recorder that is on — so that machine
// noise hits all three alike. Prints each round's samples/s, the medians and
// the ratios against no recorder (target: on >= 0.95, off ~ 1.00).
// Usage: trace_overhead [rounds=7] [steps_per_round=300] [batch=64] [places=1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/trace_recorder.h"
#include "tools/bench/random_batches.h"
#include "tools/rill/models.h"

using namespace rill;

namespace {

struct Trainer {
  Program main, startup;
  cli::Classifier model;
  Scope scope;
  std::unique_ptr<ParallelExecutor> exe;
  std::vector<FeedList> batches;

  Trainer(std::shared_ptr<TraceRecorder> trace, int batch, int places) {
    Builder b(&main, &startup, 0);
    model = cli::BuildClassifier(b, "mlp");
    Adam(1e-3f).Minimize(b, model.loss);
    Executor().Run(startup.desc(), &scope);
    ExecutionStrategy strategy;
    strategy.num_threads = places;
    strategy.trace = std::move(trace);
    exe = std::make_unique<ParallelExecutor>(
        main.desc(), &scope,
        ParallelExecutor::Options{
            .places = ParsePlaces(places == 1 ? "cpu" : "cpu:" + std::to_string(places)),
            .strategy = strategy});
    batches = bench::RandomBatches(model, batch, 16);
    for (int i = 0; i < 20; ++i) exe->Run(batches[i % 16], {model.loss.name});  // warm-up
  }

  double SamplesPerSecond(int steps, int batch) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) exe->Run(batches[i % 16], {model.loss.name});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return steps * static_cast<double>(batch) / seconds;
  }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 300;
  const int batch = argc > 3 ? std::atoi(argv[3]) : 64;
  const int places = argc > 4 ? std::atoi(argv[4]) : 1;
  TraceRecorder::Options off_options;
  off_options.start_on = false;
  auto off = std::make_shared<TraceRecorder>(off_options);
  TraceRecorder::Options on_options;
  on_options.max_events = int64_t{1} << 24;  // every round fits: nothing dropped
  auto on = std::make_shared<TraceRecorder>(on_options);
  Trainer none_trainer(nullptr, batch, places);
  Trainer off_trainer(off, batch, places);
  Trainer on_trainer(on, batch, places);
  std::vector<double> none_rates, off_rates, on_rates;
  std::printf("%5s %14s %14s %14s\n", "round", "no recorder", "recorder off", "recorder on");
  for (int r = 0; r < rounds; ++r) {
    none_rates.push_back(none_trainer.SamplesPerSecond(steps, batch));
    off_rates.push_back(off_trainer.SamplesPerSecond(steps, batch));
    on_rates.push_back(on_trainer.SamplesPerSecond(steps, batch));
    std::printf("%5d %14.0f %14.0f %14.0f\n", r, none_rates.back(), off_rates.back(),
                on_rates.back());
    std::fflush(stdout);
  }
  const double none = Median(none_rates);
  std::printf("median samples/s: no recorder %.0f, off %.0f, on %.0f\n", none, Median(off_rates),
              Median(on_rates));
  std::printf(
      "ratio off/none %.3f, on/none %.3f (target on >= 0.95); events recorded %zu, "
      "dropped %lld\n",
      Median(off_rates) / none, Median(on_rates) / none, on->Events().size(),
      static_cast<long long>(on->dropped()));
  return 0;
}
