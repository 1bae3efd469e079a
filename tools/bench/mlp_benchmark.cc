// Times MLP training steps (forward + backward + Adam update, the loss fetched)
// with the sequential executor and one BLAS thread, on the real Fashion-MNIST
// batches tools/bench/fashion_batches.h preloads (the ones PyTorch's side,
// torch_mlp.py, trains on), fed in turn. 20 warm-up steps are not timed; then
// steps run for the given seconds, each timed alone. Prints per batch size:
//   rill batch=B samples_per_sec=S median_step_ms=M steps=N first_loss=L0
//        last_loss=L1 pixel_sum=P label_sum=Y
// (one line; S = timed steps * B / their wall time, M the median step).
// Usage: mlp_benchmark [seconds_per_batch_size=3] [batch sizes... default 64 256]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rill/executor.h"
#include "rill/optimizer.h"
#include "runtime/device/blas_threads.h"
#include "tools/bench/fashion_batches.h"
#include "tools/rill/models.h"

using namespace rill;

static void Measure(int batch, double seconds) {
  Program main, startup;
  Builder b(&main, &startup, 0);
  cli::Classifier model = cli::BuildClassifier(b, "mlp");
  Adam(1e-3f).Minimize(b, model.loss);
  Executor exe;
  Scope scope;
  exe.Run(startup.desc(), &scope);
  auto prepared = exe.Prepare(main.desc(), &scope);

  const bench::BenchBatches data = bench::FashionBatches(model, batch);
  const size_t count = data.feeds.size();
  auto step = [&](int64_t i) {
    return exe.Run(*prepared, data.feeds[static_cast<size_t>(i) % count], {model.loss.name})
        .at(0)
        .GetAsDouble(0);
  };
  const double first_loss = step(0);
  for (int i = 1; i < 20; ++i) step(i);  // warm-up
  std::vector<double> step_ms;
  double last_loss = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  for (int64_t i = 20; elapsed < seconds; ++i) {
    const auto before = std::chrono::steady_clock::now();
    last_loss = step(i);
    const auto after = std::chrono::steady_clock::now();
    step_ms.push_back(std::chrono::duration<double, std::milli>(after - before).count());
    elapsed = std::chrono::duration<double>(after - start).count();
  }
  const size_t steps = step_ms.size();
  std::nth_element(step_ms.begin(), step_ms.begin() + steps / 2, step_ms.end());
  std::printf(
      "rill batch=%d samples_per_sec=%.0f median_step_ms=%.4f steps=%zu first_loss=%.4f "
      "last_loss=%.4f pixel_sum=%.3f label_sum=%lld\n",
      batch, static_cast<double>(steps) * batch / elapsed, step_ms[steps / 2], steps, first_loss,
      last_loss, data.pixel_sum, static_cast<long long>(data.label_sum));
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  SetBlasThreads(1);
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {64, 256};
  try {
    for (int batch : sizes) Measure(batch, seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_benchmark: %s\n", e.what());
    return 1;
  }
  return 0;
}
