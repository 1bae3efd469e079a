// Custom op actors: an op run by an actor of the user's instead of a kernel —
// state across iterations, results published on a channel the trainer reads,
// done called later from another thread, errors failing the iteration with
// the op's name, traced like other ops; the reference executor refuses it.
#include "rill/op_actor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "actors/executor/graph_of.h"
#include "rill/builder.h"
#include "rill/channel.h"
#include "rill/executor.h"
#include "rill/op_registry.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/trace_recorder.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

// The op: Out = the sum of the squares of its inputs (the gradients' squared
// norm this step). No kernel: an op actor runs it.
void NormShape(ShapeContext& ctx) { ctx.SetOutput("Out", {1}, DataType::kFloat64); }

RILL_REGISTER_OP(test_grad_norms, OpSchema("test_grad_norms")
                                      .Doc("Out = sum of squares of X (run by an op actor).")
                                      .Input("X", "gradients", kDuplicable | kNoGradient)
                                      .Output("Out", "their squared norm this step", kNoGradient)
                                      .InferShape(NormShape));

double SquaredNorm(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sum += t.GetAsDouble(i) * t.GetAsDouble(i);
  return sum;
}

// Accumulates the squared norm over steps; every `every` steps publishes the
// mean of the last `every` on `out` (a running statistic the trainer reads).
class GradNorms : public OpActor {
 public:
  GradNorms(std::shared_ptr<Channel<double>> out, int every, bool async)
      : out_(std::move(out)), every_(every), async_(async) {}
  ~GradNorms() override {
    if (!worker_.joinable()) return;
    // The worker's `done` may hold the graph's last reference: the graph, and
    // this actor with it, is then destroyed on the worker itself, which
    // cannot join itself (std::system_error "Resource deadlock avoided").
    if (worker_.get_id() == std::this_thread::get_id()) {
      worker_.detach();
    } else {
      worker_.join();
    }
  }

  void Run(KernelContext& ctx, OpDone done) override {
    double norm = 0;
    for (int i = 0; i < ctx.InputCount("X"); ++i) norm += SquaredNorm(ctx.Input("X", i));
    ctx.Output("Out")->Allocate(DataType::kFloat64, {1});
    ctx.Output("Out")->mutable_data<double>()[0] = norm;
    sum_ += norm;
    if (++steps_ % every_ == 0) {
      double mean = sum_ / every_;
      if (out_->TrySend(mean) != ChannelStatus::kOk) {
        done(std::make_exception_ptr(Error(ErrorCode::kInvalidArgument, "nobody reads the norms")));
        return;
      }
      sum_ = 0;
    }
    if (!async_) {
      done(nullptr);
      return;
    }
    // Finish later, from another thread: the successors wait for it.
    if (worker_.joinable()) worker_.join();
    worker_ = std::thread([done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      done(nullptr);
    });
  }

 private:
  std::shared_ptr<Channel<double>> out_;
  int every_;
  bool async_;
  double sum_ = 0;
  int steps_ = 0;
  std::thread worker_;
};

struct Model {
  Program main, startup;
  Var loss, norms;
  std::vector<std::string> grads;
  explicit Model(const std::string& norm_op = "test_grad_norms") {
    Builder b(&main, &startup, 4);
    Var x = b.Data("x", {-1, 5}, DataType::kFloat64);
    Var label = b.Data("label", {-1, 1}, DataType::kInt64);
    loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(b.Fc(x, 6, Activation::kTanh), 3), label));
    std::vector<Var> grad_vars;
    for (const ParamGrad& pg : Adam(0.01f).Minimize(b, loss)) {
      grads.push_back(pg.grad);
      grad_vars.push_back(b.Lookup(pg.grad));
    }
    norms = b.AppendOp(norm_op, {{"X", grad_vars}}, {{"Out", 1}})[0];
  }
};

FeedList Batch(int step) {
  Tensor y(DataType::kInt64, {8, 1});
  for (int i = 0; i < 8; ++i) y.mutable_data<int64_t>()[i] = (i + step) % 3;
  return {{"x", testing::RandomTensor({8, 5}, 60 + step)}, {"label", y}};
}

class OpActorTest : public ::testing::TestWithParam<bool> {
 protected:
  void TearDown() override { UnregisterOpActor("test_grad_norms"); }
};

TEST_P(OpActorTest, KeepsStateAcrossStepsAndPublishesOnAChannel) {
  const bool async = GetParam();
  auto channel = std::make_shared<Channel<double>>(16);
  RegisterOpActor("test_grad_norms",
                  [&] { return std::make_unique<GradNorms>(channel, 2, async); });
  Model m;
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  auto trace = std::make_shared<TraceRecorder>();
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.trace = trace;
  ParallelExecutor exe(m.main.desc(), &scope, {.strategy = strategy});
  std::vector<std::string> fetches = m.grads;
  fetches.push_back(m.norms.name);
  double pair_sum = 0;
  for (int step = 0; step < 6; ++step) {
    const auto out = exe.Run(Batch(step), fetches);
    double expected = 0;
    for (size_t g = 0; g < m.grads.size(); ++g) expected += SquaredNorm(out[g]);
    EXPECT_NEAR(out.back().GetAsDouble(0), expected, 1e-12 * (1 + expected));
    pair_sum += expected;
    if (step % 2 == 1) {  // the trainer reads what the actor published
      double published = 0;
      ASSERT_EQ(channel->TryRecv(&published), ChannelStatus::kOk) << "step " << step;
      EXPECT_NEAR(published, pair_sum / 2, 1e-12 * (1 + pair_sum));
      pair_sum = 0;
    }
  }
  double extra = 0;
  EXPECT_NE(channel->TryRecv(&extra), ChannelStatus::kOk);
  // Traced like the other ops: one kernel span per step on its lane.
  int spans = 0;
  for (const TraceEvent& e : trace->Events()) {
    spans += e.kind == TraceEventKind::kKernel &&
             GraphOf(exe).ops[static_cast<size_t>(e.node)].type == "test_grad_norms";
  }
  EXPECT_EQ(spans, 6);
}

INSTANTIATE_TEST_SUITE_P(DoneNowOrLater, OpActorTest, ::testing::Bool());

// Fails when asked to, by throwing or through done.
class Failing : public OpActor {
 public:
  explicit Failing(bool by_throwing) : by_throwing_(by_throwing) {}
  void Run(KernelContext&, OpDone done) override {
    if (by_throwing_) throw Error(ErrorCode::kInvalidArgument, "the service is down");
    done(std::make_exception_ptr(Error(ErrorCode::kInvalidArgument, "the service is down")));
  }

 private:
  bool by_throwing_;
};

TEST(OpActorErrorTest, AFailingActorFailsTheIterationNamingTheOp) {
  for (bool by_throwing : {false, true}) {
    RegisterOpActor("test_grad_norms",
                    [by_throwing] { return std::make_unique<Failing>(by_throwing); });
    Model m;
    Scope scope;
    Executor().Run(m.startup.desc(), &scope);
    ParallelExecutor exe(m.main.desc(), &scope);
    for (int attempt = 0; attempt < 2; ++attempt) {  // the executor stays usable
      try {
        exe.Run(Batch(0), {m.loss.name});
        ADD_FAILURE() << "no error";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("test_grad_norms"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("the service is down"), std::string::npos) << e.what();
      }
    }
    UnregisterOpActor("test_grad_norms");
  }
}

TEST(OpActorErrorTest, RegisteringTwiceFailsAndTheReferenceExecutorRefuses) {
  RegisterOpActor("test_grad_norms", [] { return std::make_unique<Failing>(false); });
  EXPECT_THROW(RegisterOpActor("test_grad_norms", [] { return std::make_unique<Failing>(false); }),
               Error);
  UnregisterOpActor("test_grad_norms");
  Model m;
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  try {
    Executor().Run(m.main.desc(), &scope, Batch(0), {m.loss.name});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test_grad_norms"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rill
