// Times classifier training steps (forward + backward + Adam update, the loss
// fetched) with the sequential executor and one BLAS thread, on the real
// Fashion-MNIST batches tools/bench/fashion_batches.h preloads (the ones
// PyTorch's side, torch_mlp.py, trains on), fed in turn. 20 warm-up steps are
// not timed; then steps run for the given seconds, each timed alone. Prints
// per batch size:
//   rill batch=B samples_per_sec=S median_step_ms=M steps=N first_loss=L0
//        last_loss=L1 pixel_sum=P label_sum=Y model=NAME allocations_per_step=A
// (one line; S = timed steps * B / their wall time, M the median step, A the
// tensor buffers a step takes from the buffer pool).
//
// --bound also prints the step's GEMM-only bound: the matrix products one
// training step makes (recorded from the step itself: the MLP's 8, and the
// CNN's per-image convolution products), replayed alone in the same order on
// buffers of their shapes, one replay timed as one step:
//   gemm batch=B samples_per_sec=S median_step_ms=M steps=N products=P gflop=G model=NAME
// Usage: mlp_benchmark [--model mlp|cnn] [--bound] [seconds_per_batch_size=3] [batch sizes...
// default 64 256]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ops/math/blas.h"
#include "ops/math/gemm_recorder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "runtime/core/buffer_pool.h"
#include "runtime/device/blas_threads.h"
#include "tools/bench/fashion_batches.h"
#include "tools/rill/models.h"

using namespace rill;

namespace {

struct Timing {
  double samples_per_sec = 0;
  double median_step_ms = 0;
  size_t steps = 0;
};

// Runs `step` 20 times untimed, then for `seconds`, each call timed alone.
Timing TimeSteps(int batch, double seconds, const std::function<void(int64_t)>& step) {
  for (int i = 0; i < 20; ++i) step(i);  // warm-up
  std::vector<double> step_ms;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  for (int64_t i = 20; elapsed < seconds; ++i) {
    const auto before = std::chrono::steady_clock::now();
    step(i);
    const auto after = std::chrono::steady_clock::now();
    step_ms.push_back(std::chrono::duration<double, std::milli>(after - before).count());
    elapsed = std::chrono::duration<double>(after - start).count();
  }
  Timing t;
  t.steps = step_ms.size();
  std::nth_element(step_ms.begin(), step_ms.begin() + static_cast<long>(t.steps / 2),
                   step_ms.end());
  t.median_step_ms = step_ms[t.steps / 2];
  t.samples_per_sec = static_cast<double>(t.steps) * batch / elapsed;
  return t;
}

// The recorded products replayed alone: each on buffers of its own shape
// (filled once), in the step's order.
Timing TimeProducts(int batch, double seconds, const std::vector<GemmCall>& calls, double* gflop) {
  struct Buffers {
    std::vector<float> a, b, c;
  };
  std::vector<Buffers> buffers(calls.size());
  *gflop = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const GemmCall& g = calls[i];
    RILL_CHECK(!g.double_precision, kUnimplemented, "the step made a double-precision product");
    buffers[i].a.assign(static_cast<size_t>(g.m * g.k), 0.01f);
    buffers[i].b.assign(static_cast<size_t>(g.k * g.n), 0.02f);
    buffers[i].c.assign(static_cast<size_t>(g.m * g.n), 0.0f);
    *gflop += 2e-9 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  }
  return TimeSteps(batch, seconds, [&](int64_t) {
    for (size_t i = 0; i < calls.size(); ++i) {
      const GemmCall& g = calls[i];
      Gemm<float>(g.trans_a, g.trans_b, g.m, g.n, g.k, 1.0f, buffers[i].a.data(),
                  buffers[i].b.data(), g.accumulate ? 1.0f : 0.0f, buffers[i].c.data());
    }
  });
}

void Measure(const std::string& model_name, int batch, double seconds, bool bound) {
  Program main, startup;
  Builder b(&main, &startup, 0);
  cli::Classifier model = cli::BuildClassifier(b, model_name);
  Adam(1e-3f).Minimize(b, model.loss);
  Executor exe;
  Scope scope;
  exe.Run(startup.desc(), &scope);
  auto prepared = exe.Prepare(main.desc(), &scope);

  const bench::BenchBatches data = bench::FashionBatches(model, batch);
  const size_t count = data.feeds.size();
  double last_loss = 0;
  auto step = [&](int64_t i) {
    last_loss = exe.Run(*prepared, data.feeds[static_cast<size_t>(i) % count], {model.loss.name})
                    .at(0)
                    .GetAsDouble(0);
  };
  step(0);
  const double first_loss = last_loss;
  std::vector<GemmCall> calls;
  if (bound) {
    GemmRecorder recorder;
    step(1);
    calls = recorder.calls();
  }
  const BufferPoolStats pool_before = BufferPool::Instance().Stats();
  const Timing t = TimeSteps(batch, seconds, step);
  const BufferPoolStats pool_after = BufferPool::Instance().Stats();
  // Tensor allocations a step makes (from the pool's cache or fresh), warm-up included.
  const double allocations = static_cast<double>(pool_after.reuses + pool_after.fresh -
                                                 pool_before.reuses - pool_before.fresh) /
                             static_cast<double>(t.steps + 20);
  std::printf(
      "rill batch=%d samples_per_sec=%.0f median_step_ms=%.4f steps=%zu first_loss=%.4f "
      "last_loss=%.4f pixel_sum=%.3f label_sum=%lld model=%s allocations_per_step=%.1f\n",
      batch, t.samples_per_sec, t.median_step_ms, t.steps, first_loss, last_loss, data.pixel_sum,
      static_cast<long long>(data.label_sum), model_name.c_str(), allocations);
  if (bound) {
    double gflop = 0;
    const Timing g = TimeProducts(batch, seconds, calls, &gflop);
    std::printf(
        "gemm batch=%d samples_per_sec=%.0f median_step_ms=%.4f steps=%zu products=%zu "
        "gflop=%.4f model=%s\n",
        batch, g.samples_per_sec, g.median_step_ms, g.steps, calls.size(), gflop,
        model_name.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  SetBlasThreads(1);
  std::string model = "mlp";
  bool bound = false;
  std::vector<const char*> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bound") == 0) {
      bound = true;
    } else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      model = argv[++i];
    } else {
      positional.push_back(argv[i]);
    }
  }
  const double seconds = positional.empty() ? 3.0 : std::atof(positional[0]);
  std::vector<int> sizes;
  for (size_t i = 1; i < positional.size(); ++i) sizes.push_back(std::atoi(positional[i]));
  if (sizes.empty()) sizes = {64, 256};
  try {
    for (int batch : sizes) Measure(model, batch, seconds, bound);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_benchmark: %s\n", e.what());
    return 1;
  }
  return 0;
}
