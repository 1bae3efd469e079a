// A trainer of one's own with Rill inside: its own data (three Gaussian blobs
// in the plane, drawn as it goes), its own loop on the actor executor over two
// places, a checkpoint every N steps (parameters, Adam's state and the step
// reached), resuming from the last one, and a trace of one step.
//
//   blob_trainer --steps 60 --dir run            # trains, checkpoints at 20, 40, 60
//   blob_trainer --steps 120 --dir run --resume  # goes on from step 60
#include <rill/rill.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

using namespace rill;

namespace {

constexpr int kBatch = 64;
constexpr int kClasses = 3;

// The data source: points around three centres, labelled by their centre.
class Blobs {
 public:
  explicit Blobs(uint64_t seed) : gen_(seed) {}
  FeedList Next() {
    static constexpr float kCentres[kClasses][2] = {{2, 0}, {-1, 1.7f}, {-1, -1.7f}};
    std::normal_distribution<float> noise(0.0f, 0.6f);
    std::uniform_int_distribution<int> pick(0, kClasses - 1);
    Tensor x(DataType::kFloat32, {kBatch, 2});
    Tensor y(DataType::kInt64, {kBatch, 1});
    for (int i = 0; i < kBatch; ++i) {
      const int c = pick(gen_);
      x.mutable_data<float>()[2 * i] = kCentres[c][0] + noise(gen_);
      x.mutable_data<float>()[2 * i + 1] = kCentres[c][1] + noise(gen_);
      y.mutable_data<int64_t>()[i] = c;
    }
    return {{"x", x}, {"label", y}};
  }

 private:
  std::mt19937_64 gen_;
};

struct Options {
  int steps = 60;
  int checkpoint_every = 20;
  std::string dir = "blob_run";
  bool resume = false;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--steps")
      o.steps = std::atoi(value().c_str());
    else if (arg == "--checkpoint-every")
      o.checkpoint_every = std::atoi(value().c_str());
    else if (arg == "--dir")
      o.dir = value();
    else if (arg == "--resume")
      o.resume = true;
    else
      throw Error(ErrorCode::kInvalidArgument, "unknown flag " + arg);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = Parse(argc, argv);
  std::filesystem::create_directories(opt.dir);
  const std::string checkpoint = opt.dir + "/checkpoint.bin";
  const std::string step_file = opt.dir + "/step.txt";

  // The model: 2 -> 32 -> 3, softmax cross-entropy, Adam.
  Program main, startup;
  Builder b(&main, &startup, /*seed=*/7);
  Var x = b.Data("x", {-1, 2});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var logits = b.Fc(b.Fc(x, 32, Activation::kRelu), kClasses);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  Adam(0.01f).Minimize(b, loss);

  Scope scope;
  Executor().Run(startup.desc(), &scope);
  int step = 0;
  if (opt.resume) {
    LoadCheckpoint(main.desc(), &scope, checkpoint);
    std::ifstream(step_file) >> step;
    std::printf("resumed from step %d\n", step);
  }

  // Two places, each on half of every batch; one step traced.
  auto trace = std::make_shared<TraceRecorder>(TraceRecorder::Options{.start_on = false});
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.trace = trace;
  ParallelExecutor exe(main.desc(), ParsePlaces("cpu:2"), &scope, strategy);

  Blobs data(/*seed=*/1000 + static_cast<uint64_t>(step));
  double first = -1, last = 0;
  for (; step < opt.steps; ++step) {
    const bool traced = step == opt.steps - 1;
    if (traced) trace->Start();
    last = exe.Run(data.Next(), {loss.name})[0].GetAsDouble(0);
    if (traced) trace->Stop();
    if (first < 0) first = last;
    if ((step + 1) % opt.checkpoint_every == 0 || step + 1 == opt.steps) {
      SaveCheckpoint(main.desc(), scope, checkpoint);
      std::ofstream(step_file) << step + 1 << "\n";
    }
  }
  trace->WriteFile(opt.dir + "/last_step_trace.json");
  std::printf("steps to %d: loss %.4f -> %.4f; checkpoint %s; trace %s/last_step_trace.json\n",
              step, first, last, checkpoint.c_str(), opt.dir.c_str());
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "blob_trainer: %s\n", e.what());
  return 1;
}
