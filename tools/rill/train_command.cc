// rill train: trains a Fashion-MNIST classifier with the actor executor (or
// the sequential reference executor), evaluating on the 10k test set after
// each epoch.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "rill/checkpoint.h"
#include "rill/device_memory.h"
#include "rill/executor.h"
#include "rill/input_pipeline.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/process_group.h"
#include "rill/program_io.h"
#include "rill/trace_recorder.h"
#include "rill/trainer_client.h"
#include "rill/transpiler.h"
#include "runtime/core/buffer_pool.h"
#include "runtime/device/blas_threads.h"
#include "tools/datasets/fashion_mnist.h"
#include "tools/datasets/place_gathered_batches.h"
#include "tools/datasets/preloaded_batches.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"
#include "tools/rill/models.h"
#include "tools/rill/role_flags.h"

namespace rill::cli {
namespace {

// Steps at the start of each epoch left out of the JSON's "steady_" timing.
constexpr size_t kUntimedSteps = 5;

struct TrainOptions {
  std::string model = "mlp";
  std::string rnn = "fused";
  bool sync_batch_norm = false;
  int epochs = 5;
  int batch = 64;
  double lr = 1e-3;
  std::string optimizer = "adam";
  std::string lr_schedule = "constant";
  int warmup_steps = 0;
  uint64_t seed = 0;
  int64_t max_steps = -1;
  std::string data = kFashionMnistDir;
  std::string executor = "actor";
  std::string places = "cpu";
  std::string strategy = "allreduce";
  std::string gradient_compression = "none";
  int64_t fuse_bytes = BuildStrategy{}.fuse_bytes;
  int64_t process_fuse_bytes = BuildStrategy{}.process_fuse_bytes;
  int64_t send_fuse_bytes = TranspileOptions{}.send_fuse_bytes;
  int threads = 0;  // 0: one per place
  int blas_threads = 0;
  int spin_us = -1;  // -1: ExecutionStrategy's default
  std::string linger = "auto";
  std::string save;
  std::string resume;
  bool json = false;
  std::string input;        // "": the pipeline, preloaded on device places
  int decode_threads = -1;  // -1: DefaultDecodeThreads
  int prefetch = 2;
  int input_nice = 5;
  std::string trace;
  int64_t trace_skip = 5;
  int64_t trace_steps = 20;
  RoleFlags role;
  // A rank of a collective job (RILL_RANK, RILL_WORLD_SIZE, RILL_MASTER, RILL_TOKEN).
  bool collective = false;
};

void DrawProgress(int epoch, size_t done, size_t total, double loss, double rate) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / std::max<size_t>(total, 1));
  std::fprintf(stderr, "\repoch %d [%s%s] %3d%%  loss %.4f  %.0f samples/s ", epoch,
               std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(),
               static_cast<int>(100 * done / std::max<size_t>(total, 1)), loss, rate);
  std::fflush(stderr);
}

struct Evaluation {
  double loss = 0;
  double accuracy = 0;
};

// Runs a program step by step with the executor the user chose.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual std::vector<Tensor> Run(const FeedList& feeds,
                                  const std::vector<std::string>& fetches) = 0;
  // Before a run that must see parameters another runner changed in the scope.
  virtual void Refresh() {}
};

class SequentialRunner : public StepRunner {
 public:
  SequentialRunner(const proto::ProgramDesc& program, Scope* scope)
      : block_(exe_.Prepare(program, scope)) {}
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<std::string>& fetches) override {
    return exe_.Run(*block_, feeds, fetches);
  }

 private:
  Executor exe_;
  std::unique_ptr<PreparedBlock> block_;
};

class ActorRunner : public StepRunner {
 public:
  ActorRunner(const proto::ProgramDesc& program, const std::vector<Place>& places, Scope* scope,
              const ExecutionStrategy& strategy, const BuildStrategy& build,
              std::shared_ptr<Runtime> runtime)
      : exe_(program, scope,
             {.places = places,
              .strategy = strategy,
              .build = build,
              .runtime = std::move(runtime)}) {}
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<std::string>& fetches) override {
    return exe_.Run(feeds, fetches);
  }
  const ParallelExecutor& executor() const { return exe_; }
  // With several places, places other than the first run on copies of the
  // parameters, taken from the scope when first needed: the evaluation
  // executor's copies must follow what the training executor has written.
  void Refresh() override { exe_.BroadcastParameters(); }

 private:
  ParallelExecutor exe_;
};

Evaluation Evaluate(StepRunner& eval, const ImageDataset& test, const Classifier& model) {
  constexpr size_t kEvalBatch = 1000;
  std::vector<int64_t> order(static_cast<size_t>(test.size()));
  std::iota(order.begin(), order.end(), 0);
  Evaluation result;
  Tensor images, labels;
  for (size_t begin = 0; begin < order.size(); begin += kEvalBatch) {
    const size_t end = std::min(order.size(), begin + kEvalBatch);
    GatherRows(test, order, begin, end, &images, &labels);
    auto out = eval.Run({{model.image.name, images}, {model.label.name, labels}},
                        {model.loss.name, model.accuracy.name});
    const double n = static_cast<double>(end - begin);
    result.loss += out[0].GetAsDouble(0) * n;
    result.accuracy += out[1].GetAsDouble(0) * n;
  }
  result.loss /= static_cast<double>(order.size());
  result.accuracy /= static_cast<double>(order.size());
  return result;
}

// `value` rounded to `decimals` places, for the JSON lines.
double Round(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

// CPU time (user + system) of the process so far, in seconds: over a wall
// interval, how many cores it kept busy, decode and gather threads included.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Peak resident memory of the process so far, in MiB.
double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Steps of one epoch over `examples` with `trainers` trainers or ranks (1 for
// a local run, which trains on a last partial batch; trainers and ranks drop
// it, so that every one takes part in every step).
size_t StepsPerEpoch(const TrainOptions& opt, size_t examples, int trainers) {
  const size_t global_batch = static_cast<size_t>(opt.batch) * static_cast<size_t>(trainers);
  const bool drop_last = opt.role.role == "trainer" || opt.collective;
  size_t steps = drop_last ? examples / global_batch : (examples + global_batch - 1) / global_batch;
  if (opt.max_steps >= 0) steps = std::min(steps, static_cast<size_t>(opt.max_steps));
  return steps;
}

// The job's last global step, for the servers to check their checkpoints against.
int64_t LastStep(const TrainOptions& opt, size_t examples, int trainers) {
  return static_cast<int64_t>(StepsPerEpoch(opt, examples, trainers)) * opt.epochs;
}

// Connects a trainer to its servers, makes it the process's client for the
// send and recv ops, and pulls the parameters it starts from.
std::shared_ptr<TrainerClient> ConnectTrainer(const RoleFlags& role, int64_t last_step,
                                              GradientCompression compression,
                                              std::shared_ptr<Runtime> runtime,
                                              const proto::ProgramDesc& program, Scope* scope) {
  TrainerClientOptions options;
  options.trainer_id = role.trainer_id;
  options.pservers = role.PserverList();
  options.token = role.token;
  options.heartbeat = std::chrono::milliseconds(role.heartbeat_ms);
  options.peer_timeout = std::chrono::milliseconds(role.peer_timeout_ms);
  options.connect_timeout = std::chrono::milliseconds(role.connect_timeout_ms);
  options.limits = role.Limits();
  options.gradient_compression = compression;
  options.last_step = last_step;
  auto client = std::make_shared<TrainerClient>(std::move(runtime), options);
  TrainerClient::Install(scope, client);
  PullParameters(program, *client, scope);
  if (client->start_step() > 0) {
    std::fprintf(stderr, "trainer %d: resuming at step %lld\n", role.trainer_id,
                 static_cast<long long>(client->start_step()));
  }
  return client;
}

// A trainer's gradient bytes pushed per step this epoch, as float32 and as
// sent, and the seconds of the epoch's steps its send ops spent pushing and
// its recv ops waiting for parameters (the rest of a step is compute); zeros
// without a client.
struct ClientEpoch {
  double raw_per_step = 0;
  double per_step = 0;
  double send_seconds = 0;
  double wait_seconds = 0;
};

ClientEpoch ClientCounters(const TrainerClient* client, TrainerClient::Counters* before) {
  if (client == nullptr) return {};
  const TrainerClient::Counters now = client->counters();
  const double steps = static_cast<double>(std::max<int64_t>(1, now.steps - before->steps));
  ClientEpoch out{static_cast<double>(now.pushed_raw_bytes - before->pushed_raw_bytes) / steps,
                  static_cast<double>(now.pushed_bytes - before->pushed_bytes) / steps,
                  static_cast<double>(now.push_ns - before->push_ns) / 1e9,
                  static_cast<double>(now.param_wait_ns - before->param_wait_ns) / 1e9};
  *before = now;
  return out;
}

// FNV-1a over the bytes of the program's parameters, in name order: equal on
// every rank of a collective job that stayed in step.
uint64_t ParametersDigest(const proto::ProgramDesc& program, const Scope& scope) {
  std::vector<std::string> names;
  for (const auto& var : program.blocks(0).vars()) {
    if (var.parameter()) names.push_back(var.name());
  }
  std::sort(names.begin(), names.end());
  uint64_t hash = 1469598103934665603ull;
  for (const auto& name : names) {
    const Tensor& t = scope.GetTensor(name);
    const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.bytes(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  return hash;
}

// The files written at the end (--save, --trace) are checked before training,
// so an unwritable path fails now rather than after the last epoch.
void CheckOutputPaths(const TrainOptions& opt) {
  for (const auto& [flag, path] : {std::pair{"--save", &opt.save}, {"--trace", &opt.trace}}) {
    if (path->empty()) continue;
    try {
      CheckWritable(*path);
    } catch (const Error& e) {
      throw Error(e.code(), StrCat(flag, " ", e.message()));
    }
  }
}

// A thread that decodes or gathers batches pays off when a core is free for
// it. When the executor's threads take every core it can only run by
// preempting one of them, and on several places the others then wait for
// that one at the next gradient merge (2 CPU places on 2 cores: 140 us of a
// 1.8 ms step); the places then decode or gather their own slices instead,
// each the same share, all at once. One place keeps the thread: its read
// would run alone, before everything else of the step.
int DefaultDecodeThreads(const std::vector<Place>& places, int threads) {
  const bool all_cpu =
      std::all_of(places.begin(), places.end(), [](const Place& p) { return p.is_cpu(); });
  return all_cpu && places.size() > 1 && threads >= Runtime::HardwareThreads() ? 0 : 1;
}

int Train(const TrainOptions& opt) {
  CheckOutputPaths(opt);
  const std::vector<Place> places = ParsePlaces(opt.places);
  const int threads = opt.threads > 0 ? opt.threads : static_cast<int>(places.size());
  const int blas =
      opt.blas_threads > 0 ? opt.blas_threads : std::max(1, Runtime::HardwareThreads() / threads);
  SetBlasThreads(blas);
  const bool pipelined = opt.input == "pipeline";
  // The pipeline's decode threads; for preloaded input, whether one thread
  // gathers whole batches for the driver to feed (1) or each place its own
  // slice in a read op (0).
  const int decode_threads =
      opt.decode_threads >= 0 ? opt.decode_threads : DefaultDecodeThreads(places, threads);
  const int input_threads = pipelined ? decode_threads : std::min(decode_threads, 1);
  const bool places_gather = !pipelined && input_threads == 0;
  const bool reads = pipelined || places_gather;  // a read op in the program takes the batches
  // Preloaded: the whole training set decoded in memory, batches gathered from it.
  const ImageDataset train =
      pipelined ? ImageDataset{} : LoadFashionMnist(opt.data, /*train=*/true);
  const ImageDataset test = LoadFashionMnist(opt.data, /*train=*/false);
  std::shared_ptr<InputPipeline> pipeline;
  if (pipelined) {
    InputPipeline::Options o;
    o.batch = opt.batch;
    o.places = static_cast<int>(places.size());
    o.seed = opt.seed;
    o.decode_threads = input_threads;
    o.prefetch = opt.prefetch;
    o.decode_nice = opt.input_nice;
    o.max_batches = opt.max_steps;
    pipeline = std::make_shared<InputPipeline>(FashionMnistSource(opt.data, /*train=*/true), o);
  }

  Program main, startup;
  Builder builder(&main, &startup, opt.seed);
  builder.set_sync_batch_norm(opt.sync_batch_norm);
  Classifier model = BuildClassifier(builder, opt.model, ParseRnnForm(opt.rnn));
  Program eval_program = main.CloneForTest();  // forward only, taken before backward is added
  const bool distributed = opt.role.role == "trainer";
  // A collective rank joins its group first: a rank that cannot fails before training.
  std::shared_ptr<ProcessGroup> group;
  if (opt.collective) {
    ProcessGroupOptions options = ProcessGroup::OptionsFromEnvironment(
        std::chrono::milliseconds(opt.role.connect_timeout_ms));
    options.heartbeat = std::chrono::milliseconds(opt.role.heartbeat_ms);
    options.peer_timeout = std::chrono::milliseconds(opt.role.peer_timeout_ms);
    group = std::make_shared<ProcessGroup>(options);
  }
  const size_t examples = static_cast<size_t>(pipelined ? pipeline->source().size() : train.size());
  const int trainers = distributed ? opt.role.trainers : group ? group->world_size() : 1;
  std::unique_ptr<Optimizer> optimizer = MakeOptimizer(opt.optimizer, static_cast<float>(opt.lr));
  optimizer->set_placeable(distributed);
  if (opt.lr_schedule == "cosine") {
    // Over the whole job: warm-up, then the cosine to 0 at the last step.
    const int64_t total = LastStep(opt, examples, trainers);
    const int warmup = static_cast<int>(std::min<int64_t>(opt.warmup_steps, total));
    optimizer->set_learning_rate_schedule(
        WarmupCosineDecay(warmup, static_cast<int>(std::max<int64_t>(1, total - warmup))));
  }
  optimizer->Minimize(builder, model.loss);
  constexpr const char* kReader = "train_reader";
  if (reads) builder.Read(builder.Reader(kReader), {model.image, model.label}, /*first=*/true);

  // A trainer runs the transpiled program: forward, backward, send, recv.
  proto::ProgramDesc train_program = main.desc();
  proto::ProgramDesc startup_program = startup.desc();
  if (distributed) {
    TranspileOptions transpile;
    transpile.trainers = opt.role.trainers;
    transpile.pservers = opt.role.PserverList();
    transpile.sync_mode = !opt.role.async;
    transpile.send_fuse_bytes = opt.send_fuse_bytes;
    TranspileResult programs = Transpile(main.desc(), startup.desc(), transpile);
    train_program = std::move(programs.trainer_main);
    startup_program = std::move(programs.trainer_startup);
  }
  Scope scope;
  Executor().Run(startup_program, &scope);
  std::shared_ptr<PlaceGatheredBatches> gathered;
  if (places_gather) {
    gathered = std::make_shared<PlaceGatheredBatches>(train, static_cast<int>(places.size()));
  }
  if (pipelined) scope.Var(kReader)->set_object(pipeline);
  if (places_gather) scope.Var(kReader)->set_object(gathered);
  if (!opt.resume.empty()) LoadCheckpoint(main.desc(), &scope, opt.resume);
  std::unique_ptr<StepRunner> step, eval;
  const ActorRunner* actor_step = nullptr;
  std::shared_ptr<TrainerClient> client;
  std::shared_ptr<TraceRecorder> trace;
  if (!opt.trace.empty()) {
    TraceRecorder::Options options;
    options.start_on = false;  // on for the steps asked for
    trace = std::make_shared<TraceRecorder>(options);
  }
  if (opt.executor == "sequential") {
    RILL_CHECK(places.size() == 1, kInvalidArgument,
               "the sequential executor runs on one place; use --executor actor for --places ",
               opt.places);
    step = std::make_unique<SequentialRunner>(main.desc(), &scope);
    eval = std::make_unique<SequentialRunner>(eval_program.desc(), &scope);
  } else {
    ExecutionStrategy strategy;
    strategy.num_threads = threads;
    strategy.blas_threads = blas;
    if (opt.spin_us >= 0) {
      strategy.spin_before_sleep = std::chrono::microseconds(opt.spin_us);
    } else if (group) {
      // A collective rank's threads wait on the network (process_allreduce)
      // for milliseconds per step, and Gloo's I/O threads need the cores
      // meanwhile: polling takes them away (MLP, 2 ranks on 2 cores, 10-15%
      // more samples/s without it).
      strategy.spin_before_sleep = std::chrono::microseconds(0);
    }
    strategy.linger_poll = opt.linger == "pause"   ? LingerPoll::kPause
                           : opt.linger == "yield" ? LingerPoll::kYield
                                                   : LingerPoll::kAuto;
    BuildStrategy build;
    build.reduce = opt.strategy == "reduce" ? ReduceStrategy::kReduce : ReduceStrategy::kAllReduce;
    build.gradient_compression = ParseGradientCompression(opt.gradient_compression);
    build.fuse_bytes = opt.fuse_bytes;
    build.process_fuse_bytes = opt.process_fuse_bytes;
    // Every rank runs forward and backward on its rows; the gradients are
    // averaged over the ranks before the optimizer ops. All start from rank 0's state.
    if (group) train_program = PrepareCollective(group, train_program, &scope, build);
    auto runtime = std::make_shared<Runtime>(threads, 1);
    if (distributed)
      client = ConnectTrainer(opt.role, LastStep(opt, examples, opt.role.trainers),
                              build.gradient_compression, runtime, train_program, &scope);
    ExecutionStrategy traced = strategy;
    traced.trace = trace;
    auto actors =
        std::make_unique<ActorRunner>(train_program, places, &scope, traced, build, runtime);
    actor_step = actors.get();
    step = std::move(actors);
    eval = std::make_unique<ActorRunner>(eval_program.desc(), places, &scope, strategy, build,
                                         runtime);
  }

  const bool tty = isatty(STDERR_FILENO) != 0;
  if (pipelined) pipeline->StartEpoch(1);
  InputPipeline::Counters seen;  // the input's counters at the start of the epoch
  // A trainer (a rank) takes rows [id * batch, (id + 1) * batch) of each
  // global batch, and a resumed job skips the steps its servers have done.
  const size_t global_batch = static_cast<size_t>(opt.batch) * static_cast<size_t>(trainers);
  const int member = distributed ? opt.role.trainer_id : group ? group->rank() : 0;
  const size_t row_offset = static_cast<size_t>(member) * static_cast<size_t>(opt.batch);
  const int64_t start_step = client ? client->start_step() : 0;
  const size_t steps = StepsPerEpoch(opt, examples, trainers);
  // The first step of the epoch that starts at global step `at`: all but
  // those a resumed job's servers have done.
  const auto first_step_at = [&](int64_t at) {
    return std::min(steps, static_cast<size_t>(std::max<int64_t>(0, start_step - at)));
  };
  // Step s's rows of the epoch's example order.
  const auto step_rows = [&](size_t s) {
    const size_t begin = s * global_batch + row_offset;
    return PreloadedBatches::Range(begin,
                                   std::min(examples, begin + static_cast<size_t>(opt.batch)));
  };
  // Preloaded data is gathered one step ahead on a thread of its own; each
  // epoch's first batches while the epoch before is evaluated.
  std::unique_ptr<PreloadedBatches> preloaded;
  const auto start_preloaded_epoch = [&](int epoch, int64_t at) {
    std::vector<int64_t> order(examples);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 shuffle(opt.seed * 1000003 + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), shuffle);
    std::vector<PreloadedBatches::Range> ranges;
    for (size_t s = first_step_at(at); s < steps; ++s) ranges.push_back(step_rows(s));
    if (gathered) {
      gathered->StartEpoch(std::move(order), std::move(ranges));
    } else {
      preloaded->StartEpoch(std::move(order), std::move(ranges));
    }
  };
  if (!pipelined) {
    if (!gathered) {
      preloaded = std::make_unique<PreloadedBatches>(
          train, PreloadedBatches::Options{opt.prefetch, opt.input_nice});
    }
    start_preloaded_epoch(1, 0);
  }
  int64_t global_step = 0;
  TrainerClient::Counters sent_before;  // the client's counters at the start of the epoch
  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    const size_t first_step = first_step_at(global_step);
    if (first_step > 0) global_step += static_cast<int64_t>(first_step);
    double loss_sum = 0;
    int64_t samples = 0;
    PreloadedBatches::Batch batch;
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ProcessCpuSeconds();
    double seconds = 0;
    // The steps after the epoch's first kUntimedSteps, timed apart: the rate
    // once start-up is over (trainers and ranks that began at different times
    // have met at their first exchange), as benchmarks time their baselines.
    const size_t steady_from = first_step + kUntimedSteps;
    double steady_start = 0;  // seconds into the loop when the timed steps began
    int64_t steady_samples = 0;
    for (size_t s = first_step; s < steps; ++s) {
      std::vector<Tensor> out;
      if (trace && global_step == opt.trace_skip) trace->Start();
      if (trace && global_step == opt.trace_skip + opt.trace_steps) trace->Stop();
      ++global_step;
      if (client) client->set_step(global_step);
      if (reads) {
        out = step->Run({}, {model.loss.name});  // the read op takes the batch
      } else {
        RILL_CHECK(preloaded->Next(&batch), kInternal, "preloaded batches of epoch ", epoch,
                   " ended before step ", s);
        out = step->Run({{model.image.name, batch.images}, {model.label.name, batch.labels}},
                        {model.loss.name});
      }
      loss_sum += out[0].GetAsDouble(0);
      const PreloadedBatches::Range rows = step_rows(s);
      samples += static_cast<int64_t>(rows.second - rows.first);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s + 1 == steady_from) steady_start = seconds;
      if (s >= steady_from) steady_samples += static_cast<int64_t>(rows.second - rows.first);
      if (tty && (s % 20 == 0 || s + 1 == steps)) {
        DrawProgress(epoch, s + 1, steps, loss_sum / static_cast<double>(s + 1 - first_step),
                     static_cast<double>(samples) / std::max(seconds, 1e-9));
      }
    }
    const double cpu_seconds = ProcessCpuSeconds() - cpu_start;
    if (tty) std::fprintf(stderr, "\n");
    const double train_loss =
        loss_sum / static_cast<double>(std::max<size_t>(steps - first_step, 1));
    const double rate = static_cast<double>(samples) / std::max(seconds, 1e-9);
    const double steady_seconds = steps > steady_from ? seconds - steady_start : 0.0;
    // The input's counters as the pipeline's (preloaded batches are gathered, not decoded).
    InputPipeline::Counters now;
    if (pipelined) {
      now = pipeline->counters();
    } else if (gathered) {
      // Counted as the pipeline counts: slices taken, every one ready.
      const int64_t slices = gathered->slices();
      now = {slices, slices, 0, 0, slices / static_cast<int64_t>(places.size())};
    } else {
      const PreloadedBatches::Counters c = preloaded->counters();
      now = {c.batches, c.ready, c.waited, c.wait_ns, c.batches};
    }
    const InputPipeline::Counters input = {now.batches - seen.batches, now.ready - seen.ready,
                                           now.waited - seen.waited, now.wait_ns - seen.wait_ns,
                                           now.decoded - seen.decoded};
    seen = now;
    // The next epoch's first batches are prepared while this one is
    // evaluated: its first step finds its batch.
    if (epoch < opt.epochs) {
      if (pipelined) {
        pipeline->StartEpoch(epoch + 1);
      } else {
        batch = {};  // the ring may reuse its buffers
        start_preloaded_epoch(epoch + 1, global_step);
      }
    }
    eval->Refresh();
    const Evaluation result = Evaluate(*eval, test, model);
    const ClientEpoch sent = ClientCounters(client.get(), &sent_before);
    if (opt.json) {
      const IterationStats stats =
          actor_step ? actor_step->executor().last_stats() : IterationStats{};
      // Rounded as the text output is: the lines stay short and comparable.
      nlohmann::ordered_json line = {
          {"epoch", epoch},
          {"model", opt.model},
          {"executor", opt.executor},
          {"places", places.size()},
          {"strategy", opt.strategy},
          {"threads", threads},
          {"steps", steps},
          {"train_loss", Round(train_loss, 6)},
          {"test_loss", Round(result.loss, 6)},
          {"test_accuracy", Round(result.accuracy, 4)},
          {"samples_per_sec", Round(rate, 1)},
          {"seconds", Round(seconds, 3)},
          // The steps after the first kUntimedSteps (none when the epoch is no longer).
          {"steady_steps", steps > steady_from ? steps - steady_from : 0},
          {"steady_seconds", Round(steady_seconds, 4)},
          {"steady_samples_per_sec",
           Round(static_cast<double>(steady_samples) / std::max(steady_seconds, 1e-9), 1)},
          // Of the training steps (evaluation excluded): user + system CPU over wall.
          {"cpu_seconds", Round(cpu_seconds, 3)},
          {"cores_used", Round(cpu_seconds / std::max(seconds, 1e-9), 2)},
          {"peak_rss_mib", Round(PeakRssMiB(), 1)},
          {"peak_tensor_mib",
           Round(static_cast<double>(BufferPool::Instance().Stats().peak_in_use_bytes) / (1 << 20),
                 1)},
          {"merges_per_step", stats.collectives},
          {"merges_overlapping_backward", stats.collectives_overlapping_backward},
          {"gradient_compression", opt.gradient_compression},
          {"merge_raw_bytes_per_step", stats.merge_bytes_raw},
          {"merge_bytes_per_step", stats.merge_bytes},
          {"sent_raw_bytes_per_step", std::llround(sent.raw_per_step)},
          {"sent_bytes_per_step", std::llround(sent.per_step)},
          // Of "seconds": pushing gradients and waiting for parameters (the rest is compute).
          {"send_seconds", Round(sent.send_seconds, 6)},
          {"wait_seconds", Round(sent.wait_seconds, 6)},
          {"input", opt.input},
          // Decode threads, or for preloaded input the gathering thread (1);
          // 0: each place decodes or gathers its own slice.
          {"input_threads", input_threads},
          {"input_batches", input.batches},
          {"input_ready", input.ready},
          {"input_waited", input.waited},
          {"input_wait_ms", Round(static_cast<double>(input.wait_ns) / 1e6, 3)}};
      if (group) {
        line["rank"] = group->rank();
        line["world_size"] = group->world_size();
        line["global_samples_per_sec"] = Round(rate * group->world_size(), 1);
        char digest[17];
        std::snprintf(digest, sizeof(digest), "%016llx",
                      static_cast<unsigned long long>(ParametersDigest(main.desc(), scope)));
        line["parameters_digest"] = digest;
      }
      // Device places (cuda:N) allocate through a caching allocator: its peak and its
      // cudaMalloc count show whether a steady step still allocates; its device-wide
      // waits, whether reusing freed blocks stalls the streams.
      for (const Place& place : places) {
        if (place.host_memory()) continue;
        const DeviceMemoryStats mem = GetDeviceMemoryStats(place);
        line["device_peak_mib"] = Round(static_cast<double>(mem.peak_in_use_bytes) / (1 << 20), 1);
        line["device_allocations"] = mem.device_allocations;
        line["device_synchronizations"] = mem.device_synchronizations;
        break;
      }
      std::printf("%s\n", line.dump().c_str());
      std::fflush(stdout);
    } else {
      std::printf("epoch %d: train loss %.4f, test loss %.4f, test accuracy %.4f, %.0f samples/s\n",
                  epoch, train_loss, result.loss, result.accuracy, rate);
    }
  }
  if (client) {
    client->Finish();
    std::fprintf(stderr, "trainer %d: done at step %lld\n", opt.role.trainer_id,
                 static_cast<long long>(global_step));
  }
  // A collective job's ranks hold the same parameters: rank 0 writes them.
  if (!opt.save.empty() && (!group || group->rank() == 0)) {
    SaveCheckpoint(main.desc(), scope, opt.save);
  }
  if (trace) {
    trace->Stop();
    trace->WriteFile(opt.trace);
    std::fprintf(
        stderr, "trace: %s (steps %lld to %lld; %lld events dropped)\n", opt.trace.c_str(),
        static_cast<long long>(opt.trace_skip),
        static_cast<long long>(std::min(global_step, opt.trace_skip + opt.trace_steps) - 1),
        static_cast<long long>(trace->dropped()));
  }
  return 0;
}

// What the flags cannot check one by one: their combinations, and the input's default.
void CheckTrainOptions(TrainOptions& opt) {
  opt.role.Check();
  if (opt.role.role == "pserver") throw UsageError("a parameter server runs rill pserver");
  if (opt.warmup_steps > 0 && opt.lr_schedule != "cosine") {
    throw UsageError("--warmup-steps needs --lr-schedule cosine");
  }
  if (opt.role.role == "trainer") {
    if (opt.role.trainers < 1 || opt.role.trainer_id < 0 ||
        opt.role.trainer_id >= opt.role.trainers || opt.role.PserverList().empty()) {
      throw UsageError("a trainer needs --trainers N >= 1, --trainer-id in [0, N) and --pservers");
    }
    if (opt.executor != "actor" || opt.places != "cpu") {
      throw UsageError("a trainer runs the actor executor on one place (--places cpu)");
    }
    opt.input = "preloaded";  // rows of each global batch by trainer id
  }
  if (opt.collective) {
    if (!opt.role.role.empty()) throw UsageError("--collective runs without --role");
    if (opt.executor != "actor") throw UsageError("--collective runs the actor executor");
    // Several places per process merge hierarchically: into one copy between
    // the places, then once across the processes.
    if (opt.places != "cpu" && opt.strategy != "reduce") {
      throw UsageError("--collective with --places " + opt.places +
                       " needs --strategy reduce (the places reduce into one copy, which the "
                       "process merges across ranks once)");
    }
    opt.input = "preloaded";  // rows of each global batch by rank
  }
  if (!opt.trace.empty() && opt.executor != "actor") {
    throw UsageError("--trace records the actor executor (--executor actor)");
  }
  // The pipeline's read op is a blocking op: it runs on the CPU place, so
  // device places are fed by the driver.
  bool device_places = false;
  try {
    for (const Place& place : ParsePlaces(opt.places)) device_places |= place.is_device();
  } catch (const Error&) {
    // a bad --places is reported where the places are used
  }
  if (opt.input.empty()) opt.input = device_places ? "preloaded" : "pipeline";
  if (opt.input == "pipeline" && device_places) {
    throw UsageError("--input pipeline needs CPU places (its read op runs on the host); " +
                     opt.places + " takes batches fed by the driver: --input preloaded");
  }
  if (opt.input == "preloaded" && device_places && opt.decode_threads == 0) {
    throw UsageError(
        "--decode-threads 0 with --input preloaded has each place gather its "
        "slice in a read op, which runs on the host; " +
        opt.places + " takes batches fed by the driver");
  }
}

}  // namespace

Command AddTrainCommand(CLI::App& rill) {
  auto opt = std::make_shared<TrainOptions>();
  CLI::App* app = rill.add_subcommand("train", "train a Fashion-MNIST classifier");
  app->add_option("--model", opt->model,
                  "mlp (784-256-128-10, ReLU), cnn, resnet (batch norm), transformer\n"
                  "(the rows as 28 tokens), lstm or gru (28 steps of 28 pixels, 128\n"
                  "units, last state -> fc 10) or linreg");
  app->add_option("--rnn", opt->rnn,
                  "lstm and gru as one fused op, unrolled over the steps into\n"
                  "matmul and elementwise ops, or those ops as the body of a while\n"
                  "loop over the steps")
      ->check(CLI::IsMember({"fused", "unrolled", "while"}));
  app->add_flag("--sync-batch-norm", opt->sync_batch_norm,
                "batch norm (resnet) with the whole batch's statistics on every place\n"
                "(sync_batch_norm), not each place's slice");
  app->add_option("--epochs", opt->epochs, "passes over the 60k training images")
      ->type_name("N")
      ->check(AtLeast(1));
  app->add_option("--batch", opt->batch, "batch size")->type_name("N")->check(AtLeast(1));
  app->add_option("--lr", opt->lr, "learning rate")->type_name("X")->check(Positive());
  app->add_option("--optimizer", opt->optimizer,
                  "sgd, momentum, adam or adamw (weight decay 0.01)");
  app->add_option("--lr-schedule", opt->lr_schedule,
                  "constant, or cosine: --warmup-steps of linear warm-up to --lr, then\n"
                  "half a cosine down to 0 at the job's last step")
      ->check(CLI::IsMember({"constant", "cosine"}));
  app->add_option("--warmup-steps", opt->warmup_steps, "steps of warm-up (--lr-schedule cosine)")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_option("--seed", opt->seed, "seed for initialisation and shuffling")
      ->type_name("N")
      ->check(NonNegative());
  app->add_option("--max-steps", opt->max_steps, "stop each epoch after N steps")
      ->type_name("N")
      ->default_str("whole epoch");
  app->add_option("--data", opt->data, "IDX files")->type_name("DIR");
  app->add_option("--executor", opt->executor, "the actor executor or the reference")
      ->check(CLI::IsMember({"actor", "sequential"}));
  app->add_option("--places", opt->places,
                  "cpu or cpu:N: N replicas, each on a slice of the batch;\n"
                  "cuda:0[,cuda:1...] GPUs; acpu:0[,acpu:1...] the asynchronous CPU device")
      ->type_name("P");
  app->add_option("--strategy", opt->strategy, "how replicas merge gradients")
      ->check(CLI::IsMember({"allreduce", "reduce"}));
  app->add_option("--gradient-compression", opt->gradient_compression,
                  "quantize gradients of 4096 elements or more for the merge between\n"
                  "places, the merge across the ranks of --collective and the push to\n"
                  "parameter servers, with error feedback")
      ->check(CLI::IsMember({"none", "int8", "int4"}));
  app->add_option("--fuse-bytes", opt->fuse_bytes,
                  "gradients merged together between places up to this many bytes\n"
                  "per merge; 0: one merge per gradient")
      ->type_name("BYTES")
      ->check(AtLeast(0));
  app->add_option("--process-fuse-bytes", opt->process_fuse_bytes,
                  "the same for the merges across the ranks of --collective")
      ->type_name("BYTES")
      ->check(AtLeast(0));
  app->add_option("--send-fuse-bytes", opt->send_fuse_bytes,
                  "a trainer's gradients leave for a parameter server in frames of up\n"
                  "to this many bytes, one per bucket; 0: a frame per gradient")
      ->type_name("BYTES")
      ->check(AtLeast(0));
  app->add_option("--threads", opt->threads,
                  "threads running ops in the actor executor (0: one per place)")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_option("--blas-threads", opt->blas_threads, "OpenBLAS threads (0: cores / --threads)")
      ->type_name("N");
  app->add_option("--spin-us", opt->spin_us,
                  "how long an idle executor thread polls for work before it sleeps\n"
                  "(default: the executor's own choice; 0 for a --collective rank)")
      ->type_name("US")
      ->check(AtLeast(0));
  app->add_option("--linger", opt->linger,
                  "how an idle executor thread polls meanwhile: pause the CPU, yield\n"
                  "the core, or auto (yield when the executor's threads and the\n"
                  "driver outnumber the cores)")
      ->check(CLI::IsMember({"auto", "pause", "yield"}));
  app->add_option("--input", opt->input,
                  "stream training batches through the input pipeline (decoded from the\n"
                  "files' bytes, taken by a read op) or take them from the whole set\n"
                  "decoded in memory (fed by the driver, or read by the places: see\n"
                  "--decode-threads) (default: pipeline; preloaded on acpu and cuda places)")
      ->check(CLI::IsMember({"pipeline", "preloaded"}));
  app->add_option("--decode-threads", opt->decode_threads,
                  "pipeline decode threads, or for preloaded input 1: a thread gathers\n"
                  "whole batches for the driver to feed; 0: each place decodes or gathers\n"
                  "its own slice in a read op (default: 0 on several CPU places whose\n"
                  "executor threads take every core, else 1)")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_option("--prefetch", opt->prefetch,
                  "batches prepared ahead of the step: per place by the pipeline, whole\n"
                  "batches gathered by a thread of their own for preloaded input")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_option("--input-nice", opt->input_nice,
                  "added to the nice value of the threads that decode or gather\n"
                  "batches, so that the places computing get the cores first")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_option("--save", opt->save, "write a checkpoint of all persistable variables at the end")
      ->type_name("FILE");
  app->add_option("--resume", opt->resume, "start from a checkpoint written by --save")
      ->type_name("FILE");
  app->add_flag("--json", opt->json, "one JSON object per epoch on stdout");
  app->add_option("--trace", opt->trace,
                  "record training steps of the actor executor and write them as a\n"
                  "Chrome trace (Perfetto, `rill trace summarize|view`)")
      ->type_name("FILE");
  app->add_option("--trace-skip", opt->trace_skip, "steps run before recording starts (warm-up)")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_option("--trace-steps", opt->trace_steps, "steps recorded")
      ->type_name("N")
      ->check(AtLeast(1));
  app->add_flag("--collective", opt->collective,
                "a rank of a collective data-parallel job (see rill launch --collective):\n"
                "joins the group from RILL_RANK, RILL_WORLD_SIZE, RILL_MASTER (rank 0's\n"
                "rendezvous, host:port) and RILL_TOKEN within --connect-timeout-ms,\n"
                "starts from rank 0's parameters, trains on rows [rank * batch,\n"
                "(rank + 1) * batch) of each global batch of world * --batch, and\n"
                "averages gradients over the ranks (Gloo) before the optimizer (with\n"
                "--places cpu:N --strategy reduce: between the places first, then once\n"
                "per process across the ranks); a rank\n"
                "silent for --peer-timeout-ms (stopped, hung) ends the job naming it");
  opt->role.Bind(*app);
  app->footer(
      "A trainer of a distributed job (--role trainer; see rill launch) builds the\n"
      "same model with its optimizer in a placeable block, transpiles it for\n"
      "--pservers, pulls the parameters, then trains on its share of each global\n"
      "batch (--batch images per trainer; --input preloaded).");
  return {app, [opt] {
            CheckTrainOptions(*opt);
            return Train(*opt);
          }};
}

}  // namespace rill::cli
