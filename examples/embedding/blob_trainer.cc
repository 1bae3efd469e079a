// A trainer of one's own with Rill inside: its own data (three Gaussian blobs
// in the plane, drawn as it goes), its own loop on the actor executor over two
// places, a checkpoint every N steps (parameters, Adam's state and the step
// reached, in one file replaced atomically), resuming from the last one, a
// trace of one step, and an op of its own run by an actor of its own:
// grad_norm watches the gradients and publishes their norm on a channel the
// loop reads.
//
//   blob_trainer --steps 60 --dir run            # trains, checkpoints at 20, 40, 60
//   blob_trainer --steps 120 --dir run --resume  # goes on from step 60
#include <rill/rill.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

// grad_norm: no kernel; an op actor computes the gradients' global norm, keeps
// the largest seen (state across steps) and publishes each step's norm.
void GradNormShape(ShapeContext& ctx) { ctx.SetOutput("Out", {1}, DataType::kFloat32); }

class GradNormActor : public OpActor {
 public:
  explicit GradNormActor(std::shared_ptr<Channel<float>> out) : out_(std::move(out)) {}
  void Run(KernelContext& ctx, OpDone done) override {
    double sum = 0;
    for (int i = 0; i < ctx.InputCount("X"); ++i) {
      const Tensor& g = ctx.Input("X", i);
      for (int64_t k = 0; k < g.numel(); ++k) sum += g.GetAsDouble(k) * g.GetAsDouble(k);
    }
    float norm = static_cast<float>(std::sqrt(sum));
    largest_ = std::max(largest_, norm);
    ctx.Output("Out")->Allocate(DataType::kFloat32, {1});
    ctx.Output("Out")->mutable_data<float>()[0] = largest_;
    (void)out_->TrySend(norm);  // a full channel drops the reading: the loop is not kept waiting
    done(nullptr);
  }

 private:
  std::shared_ptr<Channel<float>> out_;
  float largest_ = 0;
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
  const std::string trace_file = opt.dir + "/last_step_trace.json";
  // Found now rather than at the first checkpoint, steps into the run.
  CheckWritable(checkpoint);
  CheckWritable(trace_file);

  // The model: 2 -> 32 -> 3, softmax cross-entropy, Adam.
  Program main, startup;
  Builder b(&main, &startup, /*seed=*/7);
  Var x = b.Data("x", {-1, 2});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var logits = b.Fc(b.Fc(x, 32, Activation::kRelu), kClasses);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  std::vector<Var> grads;
  for (const ParamGrad& pg : Adam(0.01f).Minimize(b, loss)) grads.push_back(b.Lookup(pg.grad));

  // The op of our own, run by our actor, reading every gradient.
  RegisterOp(OpSchema("grad_norm")
                 .Doc("Out = the largest global gradient norm so far (run by an op actor).")
                 .Input("X", "the gradients", kDuplicable | kNoGradient)
                 .Output("Out", "the largest norm so far", kNoGradient)
                 .InferShape(GradNormShape));
  auto norms = std::make_shared<Channel<float>>(/*capacity=*/1024);
  RegisterOpActor("grad_norm", [norms] { return std::make_unique<GradNormActor>(norms); });
  Var largest = b.AppendOp("grad_norm", {{"X", grads}}, {{"Out", 1}})[0];

  Scope scope;
  Executor().Run(startup.desc(), &scope);
  int step = 0;
  if (opt.resume) {
    // The step is saved in the checkpoint, with the values of that step.
    const int64_t saved = LoadCheckpoint(main.desc(), &scope, checkpoint);
    if (saved < 0 || saved > opt.steps) {
      throw Error(ErrorCode::kInvalidArgument,
                  checkpoint + (saved < 0 ? std::string(": has no step")
                                          : ": is at step " + std::to_string(saved) +
                                                ", beyond --steps " + std::to_string(opt.steps)));
    }
    step = static_cast<int>(saved);
    std::printf("resumed from step %d\n", step);
  }

  // Two places, each on half of every batch; one step traced.
  auto trace = std::make_shared<TraceRecorder>(TraceRecorder::Options{.start_on = false});
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.trace = trace;
  ParallelExecutor exe(main.desc(), &scope, {.places = ParsePlaces("cpu:2"), .strategy = strategy});

  Blobs data(/*seed=*/1000 + static_cast<uint64_t>(step));
  double first = -1, last = 0;
  for (; step < opt.steps; ++step) {
    const bool traced = step == opt.steps - 1;
    if (traced) trace->Start();
    const auto out = exe.Run(data.Next(), {loss.name, largest.name});
    last = out[0].GetAsDouble(0);
    if (traced) trace->Stop();
    // What the op actor published (one reading per place and step).
    float norm = 0, mean = 0;
    int readings = 0;
    while (norms->TryRecv(&norm) == ChannelStatus::kOk) {
      mean += norm;
      ++readings;
    }
    if ((step + 1) % opt.checkpoint_every == 0 && readings > 0) {
      std::printf("step %d: loss %.4f, gradient norm %.4f (largest so far %.4f)\n", step + 1, last,
                  mean / static_cast<float>(readings), out[1].GetAsDouble(0));
    }
    if (first < 0) first = last;
    if ((step + 1) % opt.checkpoint_every == 0 || step + 1 == opt.steps) {
      SaveCheckpoint(main.desc(), scope, checkpoint, step + 1);
    }
  }
  trace->WriteFile(trace_file);
  std::printf("steps to %d: loss %.4f -> %.4f; checkpoint %s; trace %s/last_step_trace.json\n",
              step, first, last, checkpoint.c_str(), opt.dir.c_str());
  return 0;
} catch (const std::exception& e) {  // rill::Error, or the file system's (--dir)
  std::fprintf(stderr, "blob_trainer: %s\n", e.what());
  return 1;
}
