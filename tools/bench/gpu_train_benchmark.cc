// Training throughput of Rill's actor executor on one place (a GPU: cuda:0),
// for the Fashion-MNIST models of `rill train` (tools/rill/models.h) with its
// default optimizer, Adam at lr 1e-3. tools/bench/gpu_vs_torch.sh runs it
// beside the same models in PyTorch (torch_gpu_models.py).
//
// How: the startup program runs on the CPU (sequential Executor); a
// ParallelExecutor with 2 threads (1 BLAS thread) runs the training program
// on the place. The real Fashion-MNIST batches of tools/bench/fashion_batches.h
// (the ones torch_gpu_models.py trains on, in the same order) are preloaded
// as host tensors and fed in turn, as `rill train --input preloaded` feeds
// its batches. Every step
// fetches the loss (and copies it to the host: one sync per step, as
// `rill train` does and as .item() does on the PyTorch side). 20 warm-up steps
// are not timed; then steps run for the given seconds, each timed alone.
//
// Usage: gpu_train_benchmark [place, default cuda:0] [seconds, default 3]
//                            [models, default mlp,cnn] [batches, default 64,256]
// `cpu` or `acpu:0` as the place test it without a GPU. Prints per model and
// batch: "rill model=M batch=B samples_per_sec=S median_step_ms=T first_loss=L0
// last_loss=L1 pixel_sum=P label_sum=Y device_allocations=A
// device_synchronizations=W" (P and Y: the data's sums, which the script
// compares with PyTorch's; A and W: the allocator's cudaMalloc calls and
// device-wide waits during the timed steps);
// a configuration that fails prints "rill model=M batch=B FAILED: why" and
// the program exits 1 after the others.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "rill/device.h"
#include "rill/device_memory.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tools/bench/fashion_batches.h"
#include "tools/rill/flags.h"
#include "tools/rill/models.h"

using namespace rill;

namespace {

struct Result {
  double samples_per_sec = 0;
  double median_step_ms = 0;
  double pixel_sum = 0;
  int64_t label_sum = 0;
  double first_loss = 0;  // of the first warm-up step
  double last_loss = 0;   // of the last timed step
  // The caching allocator's cudaMalloc calls and device-wide waits during
  // the timed steps (device places): a steady step should make neither.
  int64_t device_allocations = 0;
  int64_t device_synchronizations = 0;
};

Result Measure(const Place& place, const std::string& model_name, int batch, double seconds) {
  Program main, startup;
  Builder b(&main, &startup, 0);
  cli::Classifier model = cli::BuildClassifier(b, model_name);
  cli::MakeOptimizer("adam", 1e-3f)->Minimize(b, model.loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.blas_threads = 1;
  ParallelExecutor exe(main.desc(), &scope, {.places = {place}, .strategy = strategy});

  constexpr int kWarmup = 20;
  const bench::BenchBatches data = bench::FashionBatches(model, batch);
  const size_t count = data.feeds.size();
  auto step = [&](int64_t i) {
    const auto out = exe.Run(data.feeds[static_cast<size_t>(i) % count], {model.loss.name});
    return out.at(0).GetAsDouble(0);  // fetches come back in host memory
  };
  Result r;
  r.pixel_sum = data.pixel_sum;
  r.label_sum = data.label_sum;
  r.first_loss = step(0);
  for (int i = 1; i < kWarmup; ++i) step(i);
  std::vector<double> step_ms;
  const bool device = !place.host_memory();
  const DeviceMemoryStats memory_before =
      device ? GetDeviceMemoryStats(place) : DeviceMemoryStats{};
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  for (int64_t i = kWarmup; elapsed < seconds; ++i) {
    const auto before = std::chrono::steady_clock::now();
    r.last_loss = step(i);
    const auto after = std::chrono::steady_clock::now();
    step_ms.push_back(std::chrono::duration<double, std::milli>(after - before).count());
    elapsed = std::chrono::duration<double>(after - start).count();
  }
  if (device) {
    const DeviceMemoryStats memory_after = GetDeviceMemoryStats(place);
    r.device_allocations = memory_after.device_allocations - memory_before.device_allocations;
    r.device_synchronizations =
        memory_after.device_synchronizations - memory_before.device_synchronizations;
  }
  const size_t steps = step_ms.size();
  r.samples_per_sec = static_cast<double>(steps) * batch / elapsed;
  std::nth_element(step_ms.begin(), step_ms.begin() + steps / 2, step_ms.end());
  r.median_step_ms = step_ms[steps / 2];
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string place_text = argc > 1 ? argv[1] : "cuda:0";
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  const std::vector<std::string> models = cli::SplitCommas(argc > 3 ? argv[3] : "mlp,cnn");
  const std::vector<std::string> batches = cli::SplitCommas(argc > 4 ? argv[4] : "64,256");
  Place place;
  try {
    place = Place::Parse(place_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_train_benchmark: %s\n", e.what());
    return 2;
  }
  if (place.kind == Place::Kind::kCuda) {
    std::string why;
    const int devices = CudaDeviceCount(&why);
    std::fprintf(stderr, "rill: %s, %d CUDA device(s)%s%s\n",
                 BuiltWithCuda() ? "built with CUDA" : "built without CUDA", devices,
                 why.empty() ? "" : ": ", why.c_str());
  }
  int status = 0;
  for (const std::string& model : models) {
    for (const std::string& batch_text : batches) {
      const int batch = std::atoi(batch_text.c_str());
      try {
        const Result r = Measure(place, model, batch, seconds);
        std::printf(
            "rill model=%s batch=%d samples_per_sec=%.0f median_step_ms=%.4f first_loss=%.4f "
            "last_loss=%.4f pixel_sum=%.3f label_sum=%lld device_allocations=%lld "
            "device_synchronizations=%lld\n",
            model.c_str(), batch, r.samples_per_sec, r.median_step_ms, r.first_loss, r.last_loss,
            r.pixel_sum, static_cast<long long>(r.label_sum),
            static_cast<long long>(r.device_allocations),
            static_cast<long long>(r.device_synchronizations));
      } catch (const std::exception& e) {
        std::string why = e.what();
        for (char& c : why) c = c == '\n' ? ' ' : c;  // one line, for the script
        std::printf("rill model=%s batch=%d FAILED on %s: %s\n", model.c_str(), batch,
                    place.ToString().c_str(), why.c_str());
        status = 1;
      }
      std::fflush(stdout);
    }
  }
  return status;
}
