// Times MLP training steps (forward + backward + Adam update) on preloaded
// data with the sequential executor and one BLAS thread. Prints one line per
// batch size: "rill batch=B samples_per_sec=S".
// Usage: mlp_benchmark [seconds_per_batch_size=3] [batch sizes... default 64 256]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rill/executor.h"
#include "rill/optimizer.h"
#include "runtime/device/blas_threads.h"
#include "tools/bench/random_batches.h"
#include "tools/rill/models.h"

using namespace rill;

static double SamplesPerSecond(int batch, double seconds) {
  Program main, startup;
  Builder b(&main, &startup, 0);
  cli::Classifier model = cli::BuildClassifier(b, "mlp");
  Adam(1e-3f).Minimize(b, model.loss);
  Executor exe;
  Scope scope;
  exe.Run(startup.desc(), &scope);
  auto step = exe.Prepare(main.desc(), &scope);

  const auto batches = bench::RandomBatches(model, batch, 16);   // preloaded, cycled
  for (int i = 0; i < 20; ++i) exe.Run(*step, batches[i % 16]);  // warm-up
  int64_t steps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    exe.Run(*step, batches[steps % 16]);
    ++steps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return static_cast<double>(steps * batch) / elapsed;
}

int main(int argc, char** argv) {
  SetBlasThreads(1);
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {64, 256};
  for (int batch : sizes) {
    std::printf("rill batch=%d samples_per_sec=%.0f\n", batch, SamplesPerSecond(batch, seconds));
    std::fflush(stdout);
  }
  return 0;
}
