// Training throughput of Rill's actor executor on one place (a GPU: cuda:0),
// for the Fashion-MNIST models of `rill train` (tools/rill/models.h) with its
// default optimizer, Adam at lr 1e-3. tools/bench/gpu_vs_torch.sh runs it
// beside the same models in PyTorch (torch_gpu_models.py).
//
// How: the startup program runs on the CPU (sequential Executor); a
// ParallelExecutor with 2 threads (1 BLAS thread) runs the training program
// on the place. 16 random batches are preloaded as host tensors and fed in
// turn, as `rill train --input preloaded` feeds its batches. Every step
// fetches the loss (and copies it to the host: one sync per step, as
// `rill train` does and as .item() does on the PyTorch side). 20 warm-up steps
// are not timed; then steps run for the given seconds.
//
// Usage: gpu_train_benchmark [place, default cuda:0] [seconds, default 3]
//                            [models, default mlp,cnn] [batches, default 64,256]
// `cpu` or `acpu:0` as the place test it without a GPU. Prints per model and
// batch: "rill model=M batch=B samples_per_sec=S first_loss=L0 last_loss=L1";
// a configuration that fails prints "rill model=M batch=B FAILED: why" and
// the program exits 1 after the others.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "rill/device.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tools/bench/random_batches.h"
#include "tools/rill/flags.h"
#include "tools/rill/models.h"

using namespace rill;

namespace {

struct Result {
  double samples_per_sec = 0;
  double first_loss = 0;  // of the first warm-up step
  double last_loss = 0;   // of the last timed step
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

  constexpr int kBatches = 16, kWarmup = 20;
  const auto batches = bench::RandomBatches(model, batch, kBatches);
  auto step = [&](int64_t i) {
    const auto out = exe.Run(batches[static_cast<size_t>(i % kBatches)], {model.loss.name});
    return out.at(0).GetAsDouble(0);  // fetches come back in host memory
  };
  Result r;
  r.first_loss = step(0);
  for (int i = 1; i < kWarmup; ++i) step(i);
  int64_t steps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    r.last_loss = step(steps++);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  r.samples_per_sec = static_cast<double>(steps * batch) / elapsed;
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
        std::printf("rill model=%s batch=%d samples_per_sec=%.0f first_loss=%.4f last_loss=%.4f\n",
                    model.c_str(), batch, r.samples_per_sec, r.first_loss, r.last_loss);
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
