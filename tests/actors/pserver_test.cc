// Parameter servers and trainers in one process, over loopback on Rill's
// transport: each server and each trainer has a Runtime (an actor system) of
// its own, as separate processes would. Sync training matches the single-process
// run on the global batch; bad messages and bad tokens are refused while the
// server keeps serving; a silent trainer ends the job with its name; a
// restarted server resumes from its checkpoint.
#include "rill/pserver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <thread>

#include "actors/distributed/transport.h"
#include "actors/distributed/wire.h"
#include "rill/builder.h"
#include "rill/checkpoint.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/runtime.h"
#include "rill/trainer_client.h"
#include "rill/transpiler.h"
#include "tests/actors/transport_testing.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/ports.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using testing::RandomTensor;

constexpr int64_t kBatch = 8;  // global: each of 2 trainers takes 4 rows

FeedList Feeds(int step, int64_t begin, int64_t end);

struct Model {
  Program main, startup;
  std::string loss;
  std::vector<std::string> params;
  // Rows [begin, end) of step's global batch.
  FeedList (*feeds)(int step, int64_t begin, int64_t end) = Feeds;
};

void BuildModel(Model* m) {
  Builder b(&m->main, &m->startup, 11);
  Var x = b.Data("x", {-1, 10});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(x, 32, Activation::kRelu);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
  Adam adam(0.01f);
  for (const auto& pair : adam.set_placeable(true).Minimize(b, loss)) {
    m->params.push_back(pair.param);
  }
  m->loss = loss.name;
}

FeedList Feeds(int step, int64_t begin, int64_t end) {
  Tensor x =
      RandomTensor({kBatch, 10}, 900 + static_cast<uint64_t>(step), -1, 1, DataType::kFloat32);
  Tensor y(DataType::kInt64, {kBatch, 1});
  for (int64_t i = 0; i < kBatch; ++i) y.mutable_data<int64_t>()[i] = (i * 3 + step) % 4;
  return {{"x", x.Slice(begin, end)}, {"label", y.Slice(begin, end)}};
}

// A sparse embedding (its gradient: selected rows) under a dense layer, SGD.
void BuildSparseModel(Model* m) {
  Builder b(&m->main, &m->startup, 13);
  Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var e = b.Embedding(ids, 20, 6, DataType::kFloat32, /*is_sparse=*/true);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(e, 3), label));
  SGD sgd(0.5f);
  for (const auto& pair : sgd.set_placeable(true).Minimize(b, loss)) {
    m->params.push_back(pair.param);
  }
  m->loss = loss.name;
  m->feeds = [](int step, int64_t begin, int64_t end) -> FeedList {
    Tensor ids(DataType::kInt64, {kBatch, 1});
    Tensor y(DataType::kInt64, {kBatch, 1});
    for (int64_t i = 0; i < kBatch; ++i) {
      ids.mutable_data<int64_t>()[i] = (i * 7 + step) % 20;
      y.mutable_data<int64_t>()[i] = (i + step) % 3;
    }
    return {{"ids", ids.Slice(begin, end)}, {"label", y.Slice(begin, end)}};
  };
}

TranspileResult Plan(const Model& m, int trainers, const std::vector<std::string>& endpoints) {
  TranspileOptions options;
  options.trainers = trainers;
  options.pservers = endpoints;
  options.min_slice_rows = 2;
  options.min_slice_elements = 64;  // the 10x32 weight is cut in two
  return Transpile(m.main.desc(), m.startup.desc(), options);
}

std::string CheckpointOf(const std::string& base, int server) {
  return base + "." + std::to_string(server);
}

// Servers of a job, each serving on its own thread.
struct Servers {
  std::vector<std::shared_ptr<Runtime>> runtimes;
  std::vector<std::unique_ptr<ParameterServer>> servers;
  std::vector<std::future<void>> serving;
  std::vector<std::string> endpoints;

  Servers(const Model& m, int trainers, int count, ParameterServerOptions options = {}) {
    std::vector<std::string> placeholders;
    for (int i = 0; i < count; ++i) placeholders.push_back("127.0.0.1:" + std::to_string(1 + i));
    TranspileResult plan = Plan(m, trainers, placeholders);
    const std::string checkpoint = options.checkpoint_path;
    for (int i = 0; i < count; ++i) {
      runtimes.push_back(std::make_shared<Runtime>(1, 1));
      options.endpoint = "127.0.0.1:0";
      // Each server of several its own checkpoint: PATH.0, PATH.1, ...
      if (!checkpoint.empty() && count > 1) options.checkpoint_path = CheckpointOf(checkpoint, i);
      options.log = [](const std::string&) {};
      servers.push_back(std::make_unique<ParameterServer>(
          plan.servers[static_cast<size_t>(i)].main, plan.servers[static_cast<size_t>(i)].startup,
          options, runtimes.back()));
      endpoints.push_back("127.0.0.1:" + std::to_string(servers.back()->port()));
      serving.push_back(std::async(std::launch::async, [s = servers.back().get()] { s->Serve(); }));
    }
  }
};

TrainerClientOptions ClientOptions(int id, const std::vector<std::string>& endpoints) {
  TrainerClientOptions options;
  options.trainer_id = id;
  options.pservers = endpoints;
  options.connect_timeout = 5000ms;
  return options;
}

// One trainer: its rows of each global batch, `steps` steps after the step
// the servers start from; the parameters after.
std::vector<Tensor> RunTrainer(const Model& m, const TranspileResult& plan, int id, int trainers,
                               int steps,
                               GradientCompression compression = GradientCompression::kNone,
                               TrainerClient::Counters* counters = nullptr, int64_t last_step = 0) {
  auto runtime = std::make_shared<Runtime>(1, 1);
  Scope scope;
  Executor().Run(plan.trainer_startup, &scope);
  std::vector<std::string> endpoints;
  for (const auto& server : plan.servers) endpoints.push_back(server.endpoint);
  TrainerClientOptions options = ClientOptions(id, endpoints);
  options.gradient_compression = compression;
  options.compression_min_elements = 60;  // the weights' slices, not the biases
  options.last_step = last_step;
  auto client = std::make_shared<TrainerClient>(runtime, options);
  TrainerClient::Install(&scope, client);
  PullParameters(plan.trainer_main, *client, &scope);
  {
    ParallelExecutor exe(plan.trainer_main, &scope, {.runtime = runtime});
    const int64_t rows = kBatch / trainers;
    for (int64_t step = client->start_step() + 1; step <= client->start_step() + steps; ++step) {
      client->set_step(step);
      exe.Run(m.feeds(static_cast<int>(step), id * rows, (id + 1) * rows), {m.loss});
    }
  }
  client->Finish();
  if (counters != nullptr) *counters = client->counters();
  std::vector<Tensor> params;
  for (const auto& name : m.params) params.push_back(scope.FindVar(name)->tensor().Clone());
  return params;
}

double MaxRelativeDifference(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, std::abs(a.GetAsDouble(i) - b.GetAsDouble(i)));
    scale = std::max(scale, std::abs(b.GetAsDouble(i)));
  }
  return diff / std::max(scale, 1e-30);
}

// The reference: `steps` steps on the whole global batch in one process.
void TrainOneProcess(const Model& m, int steps, Scope* scope) {
  Executor exe;
  exe.Run(m.startup.desc(), scope);
  auto prepared = exe.Prepare(m.main.desc(), scope);
  for (int step = 1; step <= steps; ++step) {
    exe.Run(*prepared, m.feeds(step, 0, kBatch), {m.loss});
  }
}

// Trains trainers 0 and 1 of `plan` for `steps` steps, waits for every server
// to finish (both said BYE), and expects both trainers' parameters within
// 1e-5 of `single`, the one-process run on the global batch.
void ExpectTwoTrainersMatch(const Model& m, const TranspileResult& plan, Servers& servers,
                            const Scope& single, int steps) {
  auto other = std::async(std::launch::async, [&] { return RunTrainer(m, plan, 1, 2, steps); });
  std::vector<Tensor> mine = RunTrainer(m, plan, 0, 2, steps);
  std::vector<Tensor> theirs = other.get();
  for (auto& s : servers.serving) s.get();
  for (size_t i = 0; i < m.params.size(); ++i) {
    const Tensor& expected = single.FindVar(m.params[i])->tensor();
    EXPECT_LE(MaxRelativeDifference(mine[i], expected), 1e-5) << m.params[i];
    EXPECT_LE(MaxRelativeDifference(theirs[i], expected), 1e-5) << m.params[i];
  }
}

TEST(ParameterServer, SyncTwoTrainersTwoServersMatchOneProcess) {
  Model m;
  BuildModel(&m);
  constexpr int kSteps = 20;
  Scope single;
  TrainOneProcess(m, kSteps, &single);

  Servers servers(m, 2, 2);
  TranspileResult plan = Plan(m, 2, servers.endpoints);
  ASSERT_EQ(plan.servers.size(), 2u);
  // Gradients leave in bundles (a send op of several, a PUSH_BUNDLE frame).
  int bundled = 0;
  for (const auto& op : plan.trainer_main.blocks(0).ops()) {
    bundled += op.type() == "send" && InputVars(op, "X").size() > 1;
  }
  EXPECT_GT(bundled, 0);
  ExpectTwoTrainersMatch(m, plan, servers, single, kSteps);
  EXPECT_EQ(servers.servers[0]->step(), kSteps);
}

// Selected rows pushed by two trainers (rows repeating across them) are
// merged by the server to the single-process result.
TEST(ParameterServer, SparseRowsMatchOneProcess) {
  Model m;
  BuildSparseModel(&m);
  constexpr int kSteps = 10;
  Scope single;
  TrainOneProcess(m, kSteps, &single);
  Servers servers(m, 2, 2);
  ExpectTwoTrainersMatch(m, Plan(m, 2, servers.endpoints), servers, single, kSteps);
}

// Trainers pushing int8 gradients: the servers read them back and train close
// to (not exactly like) the float32 run, with a quarter of the bytes for the
// compressed gradients.
TEST(ParameterServer, CompressedPushesTrainCloseToOneProcess) {
  Model m;
  BuildModel(&m);
  constexpr int kSteps = 20;
  Scope single;
  TrainOneProcess(m, kSteps, &single);

  Servers servers(m, 2, 2);
  TranspileResult plan = Plan(m, 2, servers.endpoints);
  TrainerClient::Counters counters;
  auto other = std::async(std::launch::async, [&] {
    return RunTrainer(m, plan, 1, 2, kSteps, GradientCompression::kInt8);
  });
  std::vector<Tensor> mine =
      RunTrainer(m, plan, 0, 2, kSteps, GradientCompression::kInt8, &counters);
  other.get();
  for (auto& s : servers.serving) s.get();
  // ||a - b|| / ||b|| per parameter: Adam's normalised steps let single
  // elements with tiny gradients differ more than that.
  double worst = 0;
  for (size_t i = 0; i < m.params.size(); ++i) {
    const Tensor& want = single.FindVar(m.params[i])->tensor();
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < want.numel(); ++k) {
      diff += std::pow(mine[i].GetAsDouble(k) - want.GetAsDouble(k), 2);
      norm += std::pow(want.GetAsDouble(k), 2);
    }
    const double d = std::sqrt(diff / norm);
    EXPECT_LE(d, 0.02) << m.params[i];
    worst = std::max(worst, d);
  }
  EXPECT_GT(worst, 1e-5) << "the gradients were not compressed";
  // Weights 10x32 and 32x4, biases 32 and 4, float32: 1,936 bytes a step.
  // Int8: each weight is cut into two slices (160 and 64 values), each one
  // chunk: codes + a scale; the biases stay float32.
  EXPECT_EQ(counters.pushed_raw_bytes, kSteps * 1936);
  EXPECT_EQ(counters.pushed_bytes, kSteps * (2 * (160 + 4) + 2 * (64 + 4) + 4 * (32 + 4)));
}

// A peer that proved the token in its handshake but speaks the protocol by
// hand: what it sends and the server's answers, one at a time.
class RawTrainer {
 public:
  RawTrainer(const std::string& endpoint, int id, const std::string& token) {
    TransportOptions options;
    options.token = token;
    TransportCallbacks callbacks;
    callbacks.on_frame = [this](ConnectionId, ReceivedFrame frame) {
      if (frame.kind != FrameKind::kMessage) return;  // heartbeats
      std::lock_guard<std::mutex> lock(mutex_);
      answers_.push_back(std::move(frame.message));
      arrived_.notify_all();
    };
    transport_ = std::make_unique<Transport>(options, callbacks);
    connection_ =
        transport_->Connect(ParseEndpoint(endpoint), Hello{PeerRole::kTrainer, id, {}}, 5s);
  }

  void Send(const proto::WireMessage& message, const Tensor& payload = Tensor()) {
    transport_->Send(connection_, EncodeMessageFrame(message, payload));
  }
  void Send(OutgoingFrame frame) { transport_->Send(connection_, std::move(frame)); }

  // The server's next answer, or an empty message after `limit`.
  proto::WireMessage Next(std::chrono::milliseconds limit = 5000ms) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!arrived_.wait_for(lock, limit, [this] { return !answers_.empty(); })) return {};
    proto::WireMessage answer = std::move(answers_.front());
    answers_.pop_front();
    return answer;
  }

  // Sends `message`, returns the server's next answer (an empty message after 5 s).
  proto::WireMessage Ask(const proto::WireMessage& message) {
    Send(message);
    std::unique_lock<std::mutex> lock(mutex_);
    if (!arrived_.wait_for(lock, 5s, [this] { return !answers_.empty(); })) {
      ADD_FAILURE() << "no answer in 5 s";
      return {};
    }
    proto::WireMessage answer = std::move(answers_.front());
    answers_.pop_front();
    return answer;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<proto::WireMessage> answers_;
  std::unique_ptr<Transport> transport_;  // last: its thread stops before the rest goes
  ConnectionId connection_ = 0;
};

// Messages that break the protocol, from a peer that did prove the token, are
// answered with an ERROR naming what is wrong; the server keeps serving.
TEST(ParameterServer, RejectsBadMessagesAndKeepsServing) {
  Model m;
  BuildModel(&m);
  ParameterServerOptions options;
  options.token = "s3cret";
  Servers servers(m, 2, 1, options);
  auto runtime = std::make_shared<Runtime>(1, 1);
  RawTrainer raw(servers.endpoints[0], 1, "s3cret");
  proto::WireMessage answer = raw.Ask(WirePull(m.params[0]));
  EXPECT_EQ(answer.kind(), proto::WireMessage::ERROR);
  EXPECT_NE(answer.error().find("did not say HELLO"), std::string::npos) << answer.error();
  answer = raw.Ask(WireHello(0));
  EXPECT_NE(answer.error().find("handshake announced id 1"), std::string::npos) << answer.error();
  answer = raw.Ask(WireHello(1));
  ASSERT_EQ(answer.kind(), proto::WireMessage::HELLO);
  answer = raw.Ask(WirePull("no_such_parameter"));
  EXPECT_NE(answer.error().find("no_such_parameter"), std::string::npos) << answer.error();
  answer = raw.Ask(WireError("an answer, not a request"));
  EXPECT_NE(answer.error().find("not for a server"), std::string::npos) << answer.error();

  TrainerClientOptions good = ClientOptions(0, servers.endpoints);
  good.token = "s3cret";
  TrainerClient client(runtime, good);
  Tensor value = client.PullNow(servers.endpoints[0], m.params.back(), 0);
  EXPECT_TRUE(value.initialized());
  client.Finish();
  raw.Send(WireBye(1));
  servers.serving[0].get();  // every trainer said BYE
}

// A small parameter the server holds whole (not in slices), and its shape.
std::pair<std::string, Shape> UnslicedParam(const Model& m) {
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  for (const std::string& name : m.params) {
    const Tensor& t = scope.FindVar(name)->tensor();
    if (t.numel() <= 8) return {name, t.shape()};
  }
  ADD_FAILURE() << "no small parameter";
  return {};
}

// The one server of a one-trainer job (sync or async; every parameter whole),
// serving on a free port until its trainer says BYE.
struct OneTrainerServer {
  static TranspileResult Plan(const Model& m, bool sync) {
    TranspileOptions options;
    options.trainers = 1;
    options.pservers = {"127.0.0.1:1"};
    options.sync_mode = sync;
    return Transpile(m.main.desc(), m.startup.desc(), options);
  }
  static ParameterServerOptions Quiet() {
    ParameterServerOptions options;
    options.log = [](const std::string&) {};
    return options;
  }

  OneTrainerServer(const Model& m, bool sync)
      : plan(Plan(m, sync)),
        server(plan.servers[0].main, plan.servers[0].startup, Quiet(),
               std::make_shared<Runtime>(1, 1)),
        serving(std::async(std::launch::async, [this] { server.Serve(); })),
        endpoint("127.0.0.1:" + std::to_string(server.port())) {}

  TranspileResult plan;
  ParameterServer server;
  std::future<void> serving;
  std::string endpoint;
};

// A standing PULL on a sync server: the value comes once the server is at the
// asked step, then again after each update, each VALUE marked standing, with
// no PULL in between; a second standing pull of the variable is refused. An
// async server answers a standing PULL once, without the mark.
TEST(ParameterServer, AStandingPullBringsEachVersionWithoutAnotherPull) {
  Model m;
  BuildModel(&m);
  const auto [param, shape] = UnslicedParam(m);
  for (bool sync : {true, false}) {
    SCOPED_TRACE(sync ? "sync" : "async");
    OneTrainerServer job(m, sync);
    RawTrainer raw(job.endpoint, 0, "");
    ASSERT_EQ(raw.Ask(WireHello(0)).kind(), proto::WireMessage::HELLO);
    ASSERT_EQ(raw.Ask(WireResume(0, 0)).kind(), proto::WireMessage::RESUME);
    proto::WireMessage pull = WirePull(param);
    pull.set_step(1);
    pull.set_standing(true);
    raw.Send(pull);
    if (sync) {
      // Not at step 1 yet: nothing comes until the gradient of step 1 does.
      EXPECT_EQ(raw.Next(300ms).kind(), proto::WireMessage::KIND_INVALID);
    }
    for (int64_t step = 1; step <= 3; ++step) {
      FramedWire push = FramedPush(
          param + "@GRAD", step,
          RandomTensor(shape, 40 + static_cast<uint64_t>(step), -1, 1, DataType::kFloat32));
      raw.Send(push.message, push.payload);
      if (!sync && step > 1) continue;  // answered once, at the first push
      const proto::WireMessage value = raw.Next();
      ASSERT_EQ(value.kind(), proto::WireMessage::VALUE) << value.error();
      EXPECT_EQ(value.var(), param);
      EXPECT_EQ(value.standing(), sync);
      EXPECT_EQ(value.step(), sync ? step : 0);
    }
    if (sync) {
      const proto::WireMessage again = raw.Ask(pull);
      EXPECT_EQ(again.kind(), proto::WireMessage::ERROR);
      EXPECT_NE(again.error().find("second standing pull"), std::string::npos) << again.error();
    } else {
      EXPECT_EQ(raw.Next(300ms).kind(), proto::WireMessage::KIND_INVALID);
    }
    raw.Send(WireBye(0));
    job.serving.get();
  }
}

// What a trainer that said HELLO may still get wrong about a gradient (another
// shape or dtype than its parameter's, a variable the server does not receive,
// one part of a bundle) is refused naming it, and nothing of it is kept: a
// bundle is refused whole, so the same step's correct bundle is then taken
// (sync: before, its first part counted and the retry was "twice for step 1").
// An async server, which applies a push at once, keeps serving too (before, the
// optimizer failed on the shape and ended the serve).
TEST(ParameterServer, AGradientOfAnotherShapeOrABadBundleIsRefusedWhole) {
  Model m;
  BuildModel(&m);
  Scope initial;
  Executor().Run(m.startup.desc(), &initial);
  ASSERT_GE(m.params.size(), 2u);
  const std::string a = m.params[0], b = m.params[1];
  const Shape shape_a = initial.FindVar(a)->tensor().shape();
  const Shape shape_b = initial.FindVar(b)->tensor().shape();
  Shape wider = shape_a;
  wider.back() += 1;
  for (bool sync : {true, false}) {
    SCOPED_TRACE(sync ? "sync" : "async");
    OneTrainerServer job(m, sync);
    RawTrainer raw(job.endpoint, 0, "");
    ASSERT_EQ(raw.Ask(WireHello(0)).kind(), proto::WireMessage::HELLO);
    ASSERT_EQ(raw.Ask(WireResume(0, 0)).kind(), proto::WireMessage::RESUME);
    const auto grad = [](const Shape& shape, uint64_t seed, DataType dtype = DataType::kFloat32) {
      return RandomTensor(shape, seed, -1, 1, dtype);
    };

    FramedWire wrong = FramedPush(a + "@GRAD", 1, grad(wider, 1));
    raw.Send(wrong.message, wrong.payload);
    proto::WireMessage answer = raw.Next();
    ASSERT_EQ(answer.kind(), proto::WireMessage::ERROR);
    EXPECT_NE(answer.error().find("pushed \"" + a + "@GRAD\" as float32 " + ShapeToString(wider)),
              std::string::npos)
        << answer.error();
    EXPECT_NE(answer.error().find(ShapeToString(shape_a)), std::string::npos) << answer.error();
    FramedWire doubles = FramedPush(a + "@GRAD", 1, grad(shape_a, 2, DataType::kFloat64));
    raw.Send(doubles.message, doubles.payload);
    answer = raw.Next();
    EXPECT_NE(answer.error().find("as float64"), std::string::npos) << answer.error();

    raw.Send(
        EncodeBundleFrame(1, 0, {{a + "@GRAD", grad(shape_a, 3)}, {"nothing@GRAD", grad({2}, 4)}}));
    answer = raw.Next();
    EXPECT_NE(answer.error().find("\"nothing@GRAD\", which this server does not receive"),
              std::string::npos)
        << answer.error();
    raw.Send(
        EncodeBundleFrame(1, 0, {{a + "@GRAD", grad(shape_a, 5)}, {b + "@GRAD", grad(wider, 6)}}));
    answer = raw.Next();
    EXPECT_NE(answer.error().find("pushed \"" + b + "@GRAD\""), std::string::npos)
        << answer.error();

    // Nothing of the refused pushes was kept: the step's correct bundle is taken.
    raw.Send(EncodeBundleFrame(1, 0,
                               {{a + "@GRAD", grad(shape_a, 7)}, {b + "@GRAD", grad(shape_b, 8)}}));
    EXPECT_EQ(raw.Next(300ms).kind(), proto::WireMessage::KIND_INVALID);  // no ERROR
    proto::WireMessage pull = WirePull(a);
    pull.set_step(1);
    answer = raw.Ask(pull);
    ASSERT_EQ(answer.kind(), proto::WireMessage::VALUE) << answer.error();
    EXPECT_EQ(answer.step(), 1);
    raw.Send(WireBye(0));
    EXPECT_NO_THROW(job.serving.get());
  }
}

TEST(ParameterServer, SilentTrainerEndsTheJobNamingIt) {
  Model m;
  BuildModel(&m);
  ParameterServerOptions options;
  options.heartbeat = 100ms;
  options.peer_timeout = 600ms;
  Servers servers(m, 2, 1, options);
  auto runtime = std::make_shared<Runtime>(1, 1);
  RawTrainer silent(servers.endpoints[0], 1, "");  // says HELLO, then nothing
  ASSERT_EQ(silent.Ask(WireHello(1)).kind(), proto::WireMessage::HELLO);
  TrainerClientOptions options0 = ClientOptions(0, servers.endpoints);
  options0.heartbeat = 100ms;
  TrainerClient client(runtime, options0);
  const auto start = std::chrono::steady_clock::now();
  try {
    servers.serving[0].get();
    ADD_FAILURE() << "the server kept serving without trainer 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trainer 1"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // The other trainer hears why.
  for (int i = 0; i < 50 && !client.failure(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(client.failure());
  try {
    std::rethrow_exception(client.failure());
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trainer 1"), std::string::npos) << e.what();
  }
}

TEST(ParameterServer, RestartedServerResumesFromItsCheckpoint) {
  Model m;
  BuildModel(&m);
  const std::string path = ::testing::TempDir() + "pserver_test.ckpt";
  std::remove(path.c_str());
  std::remove((path + ".prev").c_str());
  ParameterServerOptions options;
  options.checkpoint_path = path;
  options.checkpoint_every = 3;
  std::vector<Tensor> trained;
  {
    Servers servers(m, 1, 1, options);
    trained = RunTrainer(m, Plan(m, 1, servers.endpoints), 0, 1, 6);
    servers.serving[0].get();
  }
  Servers restarted(m, 1, 1, options);
  EXPECT_EQ(restarted.servers[0]->start_steps(), (std::vector<int64_t>{6, 3}));
  TranspileResult plan = Plan(m, 1, restarted.endpoints);
  // No steps: the trainer pulls the saved parameters and the saved step.
  std::vector<Tensor> resumed = RunTrainer(m, plan, 0, 1, 0);
  restarted.serving[0].get();
  EXPECT_EQ(restarted.servers[0]->step(), 6);
  for (size_t i = 0; i < m.params.size(); ++i) {
    EXPECT_EQ(MaxRelativeDifference(resumed[i], trained[i]), 0) << m.params[i];
  }
  std::remove(path.c_str());
  std::remove((path + ".prev").c_str());
}

// A trainer whose token is wrong fails its handshake at once (the server
// keeps serving); one whose connection drops before BYE ends the job naming
// it, and the other trainer hears why.
TEST(ParameterServer, AWrongTokenIsRefusedAndALostTrainerEndsTheJobNamingIt) {
  Model m;
  BuildModel(&m);
  ParameterServerOptions options;
  options.token = "s3cret";
  Servers servers(m, 2, 1, options);
  auto runtime = std::make_shared<Runtime>(1, 1);
  TrainerClientOptions bad = ClientOptions(0, servers.endpoints);
  bad.token = "guess";
  const auto start = std::chrono::steady_clock::now();
  try {
    TrainerClient refused(runtime, bad);
    ADD_FAILURE() << "a wrong token was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find(servers.endpoints[0]), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s) << "refused only at the deadline";
  TrainerClientOptions good0 = ClientOptions(0, servers.endpoints);
  good0.token = "s3cret";
  TrainerClient client0(runtime, good0);
  {
    TrainerClientOptions good1 = ClientOptions(1, servers.endpoints);
    good1.token = "s3cret";
    TrainerClient client1(runtime, good1);
    EXPECT_TRUE(client1.PullNow(servers.endpoints[0], m.params.back(), 0).initialized());
  }  // trainer 1 leaves without BYE: its connection closes
  const auto lost = std::chrono::steady_clock::now();
  try {
    servers.serving[0].get();
    ADD_FAILURE() << "the server kept serving without trainer 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lost the connection to trainer 1"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - lost, 10s);
  for (int i = 0; i < 250 && !client0.failure(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(client0.failure());
  try {
    std::rethrow_exception(client0.failure());
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trainer 1"), std::string::npos) << e.what();
  }
}

// What the issue saw take a CAF server down (a first packet claiming a
// 0xFFFFFFF0-byte payload), the same claim from a peer that did prove the
// token, a wrong token, garbage, 1,000 connects and drops, 50 connections
// trickling a byte each, and, from peers that proved the token, a frame of an
// unknown kind, a tensor whose bytes do not match its dtype x shape, half a
// header and a payload that stops half way (both then silent): each is closed
// (at once, or at the handshake or idle deadline), the server's memory stays
// put, and a real 2-trainer job then runs on it to the single-process result.
TEST(ParameterServer, AbusiveConnectionsLeaveTheServerServingARealJob) {
  Model m;
  BuildModel(&m);
  constexpr int kSteps = 5;
  Scope single;
  TrainOneProcess(m, kSteps, &single);
  ParameterServerOptions options;  // no token: an empty one, which the raw peers prove
  options.limits.handshake_timeout = 1000ms;
  options.limits.idle_timeout = 2000ms;  // above the trainers' 500 ms heartbeats
  Servers servers(m, 2, 1, options);
  const uint16_t port = servers.servers[0]->port();
  const size_t resident = testing::ResidentBytes();
  for (int i = 0; i < 1000; ++i) testing::RawSocket dropped(port);
  {
    std::vector<std::unique_ptr<testing::RawSocket>> slow;
    for (int i = 0; i < 50; ++i) {
      slow.push_back(std::make_unique<testing::RawSocket>(port));
      ASSERT_TRUE(slow.back()->Write(std::vector<uint8_t>{'R'}));
    }
    // Over the cap of handshakes from one address: closed at once; the rest
    // at the handshake deadline.
    for (auto& socket : slow) EXPECT_TRUE(socket->ClosedByPeerWithin(10s));
  }
  {
    testing::RawSocket unknown(port);
    ASSERT_TRUE(testing::RawHandshake(unknown, ""));
    ASSERT_TRUE(unknown.Write(testing::HeaderBytes(77, 4, 0)));
    EXPECT_TRUE(unknown.ClosedByPeerWithin(10s));
  }
  {
    // A PUSH of float32[3] whose payload says 13 bytes, not 12.
    testing::RawSocket mismatch(port);
    ASSERT_TRUE(testing::RawHandshake(mismatch, ""));
    FramedWire push =
        FramedPush(m.params[0] + "@GRAD", 1, RandomTensor({3}, 5, -1, 1, DataType::kFloat32));
    const std::string meta = push.message.SerializeAsString();
    std::vector<uint8_t> bytes = testing::HeaderBytes(1, static_cast<uint32_t>(meta.size()), 13);
    testing::Append(bytes, meta);
    bytes.resize(bytes.size() + 13, 0);
    ASSERT_TRUE(mismatch.Write(bytes));
    EXPECT_TRUE(mismatch.ClosedByPeerWithin(10s));
  }
  {
    testing::RawSocket half_header(port), half_payload(port);
    ASSERT_TRUE(testing::RawHandshake(half_header, ""));
    ASSERT_TRUE(half_header.Write(testing::HeaderBytes(1, 10, 0).data(), 7));
    // 1 MB of a 64 MB push, then nothing.
    ASSERT_TRUE(testing::RawHandshake(half_payload, ""));
    proto::WireMessage big;
    big.set_kind(proto::WireMessage::PUSH);
    big.set_var(m.params[0] + "@GRAD");
    big.mutable_tensor()->set_dtype(proto::FLOAT32);
    big.mutable_tensor()->add_shape(16 << 20);
    const std::string meta = big.SerializeAsString();
    std::vector<uint8_t> bytes =
        testing::HeaderBytes(1, static_cast<uint32_t>(meta.size()), uint64_t{64} << 20);
    testing::Append(bytes, meta);
    bytes.resize(bytes.size() + (1 << 20), 0x3F);
    ASSERT_TRUE(half_payload.Write(bytes));
    EXPECT_TRUE(half_header.ClosedByPeerWithin(10s));
    EXPECT_TRUE(half_payload.ClosedByPeerWithin(10s));
  }
  {
    testing::RawSocket claim(port);
    ASSERT_TRUE(claim.connected());
    std::vector<uint8_t> packet = testing::HeaderBytes(1, 16, 0xFFFFFFF0u);
    packet.resize(32, 0);
    ASSERT_TRUE(claim.Write(packet));
    EXPECT_TRUE(claim.ClosedByPeerWithin(10s));
  }
  {
    testing::RawSocket authenticated(port);
    ASSERT_TRUE(testing::RawHandshake(authenticated, ""));
    ASSERT_TRUE(authenticated.Write(testing::HeaderBytes(1, 100, 0xFFFFFFF0u)));
    EXPECT_TRUE(authenticated.ClosedByPeerWithin(10s));
  }
  {
    testing::RawSocket wrong(port);
    EXPECT_FALSE(testing::RawHandshake(wrong, "a guess"));
    EXPECT_TRUE(wrong.ClosedByPeerWithin(10s));
  }
  {
    testing::RawSocket garbage(port);
    ASSERT_TRUE(garbage.Write(std::vector<uint8_t>(64, 0xAB)));
    EXPECT_TRUE(garbage.ClosedByPeerWithin(10s));
  }
  const size_t after = testing::ResidentBytes();
  std::printf("resident memory after the abuse: %+.1f MB\n",
              (static_cast<double>(after) - static_cast<double>(resident)) / (1 << 20));
  EXPECT_LT(after, resident + (64u << 20));
  ExpectTwoTrainersMatch(m, Plan(m, 2, servers.endpoints), servers, single, kSteps);
}

TEST(ParameterServer, AnUnwritableCheckpointPathIsRefusedAtStart) {
  Model m;
  BuildModel(&m);
  ParameterServerOptions options;
  options.checkpoint_path = ::testing::TempDir() + "no_such_dir/pserver.ckpt";
  options.checkpoint_every = 2;
  try {
    Servers servers(m, 1, 1, options);
    ADD_FAILURE() << "the server started";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(options.checkpoint_path + ": not writable"),
              std::string::npos)
        << e.what();
  }
}

// The checkpoint's directory vanishes mid-job: the serve ends with the I/O
// error as its cause (not with the trainers that leave because of it), and
// the trainer hears it.
TEST(ParameterServer, ACheckpointThatCannotBeSavedEndsTheServeWithTheIoError) {
  Model m;
  BuildModel(&m);
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pserver_vanish";
  std::filesystem::create_directories(dir);
  ParameterServerOptions options;
  options.checkpoint_path = (dir / "pserver.ckpt").string();
  options.checkpoint_every = 2;
  Servers servers(m, 1, 1, options);
  std::filesystem::remove_all(dir);
  try {
    RunTrainer(m, Plan(m, 1, servers.endpoints), 0, 1, 4);
    ADD_FAILURE() << "the trainer finished";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot save the checkpoint of step 2"), std::string::npos)
        << e.what();
  }
  try {
    servers.serving[0].get();
    ADD_FAILURE() << "the serve succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot save the checkpoint of step 2: " +
                                         options.checkpoint_path),
              std::string::npos)
        << e.what();
  }
}

// Destroys `runtime`, whose actor system waits for every actor it runs: an
// actor left behind would hold it forever, so after `limit` a watchdog ends
// the test process with the reason rather than let it hang. (The runtime is
// destroyed on the calling thread: destroyed on a thread started for it,
// CAF 0.17's actor system was seen to hang with no actor of ours left.)
void ExpectShutsDownWithin(std::shared_ptr<Runtime> runtime, std::chrono::seconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  std::thread([finished = done->get_future(), limit]() {
    if (finished.wait_for(limit) != std::future_status::ready) {
      std::fprintf(stderr,
                   "FAILED: the runtime did not shut down within %lld s: an actor is left\n",
                   static_cast<long long>(limit.count()));
      std::_Exit(1);
    }
  }).detach();
  runtime.reset();
  done->set_value();
}

// Files of a checkpoint path: the newest and the previous.
std::vector<std::string> CheckpointFiles(const std::string& path) { return {path, path + ".prev"}; }

void CopyCheckpoint(const std::string& from, const std::string& to) {
  for (size_t i = 0; i < 2; ++i) {
    const std::string source = CheckpointFiles(from)[i], target = CheckpointFiles(to)[i];
    std::filesystem::remove(target);
    if (std::filesystem::exists(source)) std::filesystem::copy_file(source, target);
  }
}

// Two servers checkpointing every 2 steps, restarted after steps 2, 4 and 6
// (the trainer resuming each time); server 1's checkpoints as they were after
// step 2 (at 2, and the startup values) and after step 4 (at 4 and 2) kept
// aside, to stand for a server killed before its next checkpoint.
class TwoServerCheckpoints : public ::testing::Test {
 protected:
  void SetUp() override {
    BuildModel(&m_);
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("pserver_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    options_.checkpoint_path = (dir_ / "pserver.ckpt").string();
    options_.checkpoint_every = 2;
    for (int round = 1; round <= 3; ++round) {
      Servers servers(m_, 1, 2, options_);
      trained_ = RunTrainer(m_, Plan(m_, 1, servers.endpoints), 0, 1, 2);
      for (auto& serving : servers.serving) serving.get();
      if (round < 3) CopyCheckpoint(Server(1), Kept(2 * round));
    }
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::string Server(int i) const { return CheckpointOf(options_.checkpoint_path, i); }
  std::string Kept(int step) const { return (dir_ / ("kept" + std::to_string(step))).string(); }

  Model m_;
  std::filesystem::path dir_;
  ParameterServerOptions options_;
  std::vector<Tensor> trained_;  // after 6 steps
};

// Server 0 has checkpoints at 6 and 4, server 1 at 4 and 2: the job goes on
// from 4 on both, server 0 drops its checkpoint of step 6, and the two steps
// trained again give the parameters of the 6 steps trained without a break.
TEST_F(TwoServerCheckpoints, ServersWhoseNewestCheckpointsDifferResumeFromTheCommonStep) {
  CopyCheckpoint(Kept(4), Server(1));
  Servers servers(m_, 1, 2, options_);
  EXPECT_EQ(servers.servers[0]->start_steps(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(servers.servers[1]->start_steps(), (std::vector<int64_t>{4, 2}));
  const std::vector<Tensor> again = RunTrainer(m_, Plan(m_, 1, servers.endpoints), 0, 1, 2);
  for (auto& serving : servers.serving) serving.get();
  EXPECT_EQ(servers.servers[0]->step(), 6);
  EXPECT_EQ(servers.servers[1]->step(), 6);
  for (size_t i = 0; i < m_.params.size(); ++i) {
    EXPECT_EQ(MaxRelativeDifference(again[i], trained_[i]), 0) << m_.params[i];
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ReadCheckpointFile(Server(i)).step, 6) << i;
    EXPECT_EQ(ReadCheckpointFile(Server(i) + ".prev").step, 4) << i;
  }
}

// Server 1's checkpoints are at 2 and 0, server 0's at 6 and 4: nothing in
// common, so the trainer refuses to start, naming both, and leaves nothing
// running; the servers keep their files.
TEST_F(TwoServerCheckpoints, ServersWithNoStepInCommonAreRefused) {
  CopyCheckpoint(Kept(2), Server(1));
  auto runtime = std::make_shared<Runtime>(1, 1);
  {
    Servers servers(m_, 1, 2, options_);
    EXPECT_EQ(servers.servers[1]->start_steps(), (std::vector<int64_t>{2, 0}));
    try {
      TrainerClient client(runtime, ClientOptions(0, servers.endpoints));
      ADD_FAILURE() << "the trainer started from step " << client.start_step();
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("no step to start from in common"), std::string::npos) << what;
      EXPECT_NE(what.find(servers.endpoints[0] + " can start from step 6, 4"), std::string::npos)
          << what;
      EXPECT_NE(what.find(servers.endpoints[1] + " can start from step 2, 0"), std::string::npos)
          << what;
    }
    ExpectShutsDownWithin(std::move(runtime), 20s);
    for (auto& serving : servers.serving) EXPECT_THROW(serving.get(), Error);
  }
  EXPECT_EQ(ReadCheckpointFile(Server(0)).step, 6);
}

// A trainer whose job ends at step 5 meets a server with a checkpoint at 6:
// the server refuses to serve the job, naming the file.
TEST_F(TwoServerCheckpoints, ACheckpointBeyondTheJobsLastStepIsRefused) {
  Servers servers(m_, 1, 2, options_);
  try {
    RunTrainer(m_, Plan(m_, 1, servers.endpoints), 0, 1, 0, GradientCompression::kNone, nullptr,
               /*last_step=*/5);
    ADD_FAILURE() << "the trainer started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint " + Server(0) +
                                         " is at step 6, beyond the last step of this job (5"),
              std::string::npos)
        << e.what();
  }
  for (auto& serving : servers.serving) EXPECT_THROW(serving.get(), Error);
}

// The second server cannot be reached after the link to the first is up: the
// constructor throws naming it and leaves no link actor holding the runtime.
TEST(TrainerClient, AConstructorThatFailsLeavesNoActorBehind) {
  Model m;
  BuildModel(&m);
  Servers servers(m, 1, 1);
  auto runtime = std::make_shared<Runtime>(1, 1);
  const std::string unreachable = "127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort());
  TrainerClientOptions options = ClientOptions(0, {servers.endpoints[0], unreachable});
  options.connect_timeout = 1000ms;
  try {
    TrainerClient client(runtime, options);
    ADD_FAILURE() << "connected to " << unreachable;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find(unreachable), std::string::npos) << e.what();
  }
  ExpectShutsDownWithin(std::move(runtime), 20s);
  // The server saw the trainer come and go.
  EXPECT_THROW(servers.serving[0].get(), Error);
}

// The same with a link that owns a transport: its actor and its transport's
// thread end with the client.

}  // namespace
}  // namespace rill
