// The actor executor against the reference executor: same programs, same
// feeds, bit-identical results; and what happens when things go wrong.
#include "rill/parallel_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/optimizer.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using testing::RandomTensor;

struct Mlp {
  Program main, startup;
  Var loss;
};

void BuildMlp(Mlp* m) {
  Builder b(&m->main, &m->startup, 7);
  Var x = b.Data("x", {-1, 12});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(b.Fc(x, 16, Activation::kRelu), 8, Activation::kTanh);
  m->loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
  Adam(1e-2f).Minimize(b, m->loss);
}

FeedList Batch(int step) {
  Tensor x = RandomTensor({6, 12}, 100 + step, -1, 1, DataType::kFloat32);
  Tensor y(DataType::kInt64, {6, 1});
  for (int i = 0; i < 6; ++i) y.mutable_data<int64_t>()[i] = (i + step) % 4;
  return {{"x", x}, {"label", y}};
}

TEST(ParallelExecutorTest, MlpTrainingMatchesReferenceBitForBit) {
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(StrCat(threads, " threads"));
    Mlp m;
    BuildMlp(&m);
    Scope ref_scope, actor_scope;
    Executor reference;
    reference.Run(m.startup.desc(), &ref_scope);
    reference.Run(m.startup.desc(), &actor_scope);
    auto step = reference.Prepare(m.main.desc(), &ref_scope);
    ExecutionStrategy strategy;
    strategy.num_threads = threads;
    ParallelExecutor exe(m.main.desc(), &actor_scope, {.strategy = strategy});
    for (int s = 0; s < 5; ++s) {
      auto want = reference.Run(*step, Batch(s), {m.loss.name, "fc_0.w"});
      auto got = exe.Run(Batch(s), {m.loss.name, "fc_0.w"});
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(testing::BitEqual(want[0], got[0]))
          << "loss at step " << s << ": " << want[0].GetAsDouble(0) << " vs "
          << got[0].GetAsDouble(0);
      EXPECT_TRUE(testing::BitEqual(want[1], got[1])) << "fc_0.w at step " << s;
    }
  }
}

}  // namespace
}  // namespace rill

// -- errors ------------------------------------------------------------------------

namespace rill {
namespace {

// Out = X, but fails when X[0] is negative, and sleeps sleep_ms first.
void CheckedCopyKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int sleep_ms = ctx.Attr<int>("sleep_ms");
  if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  RILL_CHECK(x.data<float>()[0] >= 0, kInvalidArgument, "X[0] is negative: ", x.data<float>()[0]);
  ctx.Output("Out")->CopyFrom(x);
}

RILL_REGISTER_OP(test_checked_copy, OpSchema("test_checked_copy")
                                        .Doc("Out = X; fails when X[0] < 0.")
                                        .Input("X", "input")
                                        .Output("Out", "copy of X")
                                        .Attr("sleep_ms", 0, "sleep first", AtLeast(0))
                                        .InferShape(SameShapeAs("X", "Out"))
                                        .CpuKernel(CheckedCopyKernel));

// x -> scale -> test_checked_copy -> relu -> y; plus an independent branch z = tanh(x).
struct Pipeline {
  Program main, startup;
  Var x, y, z;
};

void BuildPipeline(Pipeline* p, int sleep_ms = 0) {
  Builder b(&p->main, &p->startup, 1);
  p->x = b.Data("x", {-1, 3});
  Var s = b.Scale(p->x, 2.0f);
  Var c = b.AppendOp("test_checked_copy", {{"X", {s}}}, {{"Out", 1}},
                     [&](proto::OpDesc* op) { SetAttr(op, "sleep_ms", sleep_ms); })[0];
  p->y = b.Relu(c);
  p->z = b.Tanh(p->x);
}

Tensor Row(float first) { return testing::MakeTensor<float>({1, 3}, {first, 1, 2}); }

// Collects watchdog reports from the executor's threads.
struct ReportLog {
  std::mutex mutex;
  std::string text;

  // A strategy whose watchdog looks every timeout / 4 and reports here.
  ExecutionStrategy Strategy(std::chrono::milliseconds timeout) {
    ExecutionStrategy strategy;
    strategy.watchdog_timeout = timeout;
    strategy.on_watchdog_report = [this](const std::string& report) {
      std::lock_guard<std::mutex> lock(mutex);
      text += report;
    };
    return strategy;
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(mutex);
    return text;
  }
};

TEST(ParallelExecutorErrorTest, ThrowingKernelFailsTheIterationAndTheNextRunWorks) {
  Pipeline p;
  BuildPipeline(&p);
  Scope scope;
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  ParallelExecutor exe(p.main.desc(), &scope, {.strategy = strategy});
  try {
    exe.Run({{"x", Row(-1)}}, {p.y.name});
    FAIL() << "expected the kernel's error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(what.find("block 0, op 1 (test_checked_copy)"), std::string::npos) << what;
    EXPECT_NE(what.find("on cpu"), std::string::npos) << what;
    EXPECT_NE(what.find("X[0] is negative"), std::string::npos) << what;
  }
  auto out = exe.Run({{"x", Row(3)}}, {p.y.name, p.z.name});
  EXPECT_EQ(testing::ToDoubles(out[0]), (std::vector<double>{6, 2, 4}));
}

TEST(ParallelExecutorErrorTest, MissingFeedNamesTheFeedAndItsReader) {
  Pipeline p;
  BuildPipeline(&p);
  Scope scope;
  ParallelExecutor exe(p.main.desc(), &scope);
  try {
    exe.Run({}, {p.y.name});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("block 0, op 0 (scale): feed \"x\" is missing"), std::string::npos) << what;
  }
  EXPECT_EQ(testing::ToDoubles(exe.Run({{"x", Row(1)}}, {p.y.name})[0]),
            (std::vector<double>{2, 2, 4}));
}

TEST(ParallelExecutorErrorTest, WrongFeedShapeTypeOrNameIsRejectedBeforeRunning) {
  Pipeline p;
  BuildPipeline(&p);
  Scope scope;
  ParallelExecutor exe(p.main.desc(), &scope);
  auto expect_error = [&](const FeedList& feeds, const std::vector<std::string>& fetches,
                          const std::string& part) {
    try {
      exe.Run(feeds, fetches);
      ADD_FAILURE() << "expected an error mentioning " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error({{"x", testing::MakeTensor<float>({1, 4}, {1, 2, 3, 4})}}, {p.y.name},
               "has shape [1, 4] but the variable is declared [-1, 3]");
  expect_error({{"x", testing::MakeTensor<double>({1, 3}, {1, 2, 3})}}, {p.y.name}, "float64");
  expect_error({{"nope", Row(1)}}, {p.y.name}, "feed \"nope\" is not a variable");
  expect_error({{"x", Row(1)}}, {"nope"}, "fetch \"nope\" is not a variable");
  expect_error({{"x", Tensor()}}, {p.y.name}, "feed \"x\" holds no value");
  EXPECT_EQ(exe.Run({{"x", Row(1)}}, {p.y.name}).size(), 1u);
}

// The reference executor checks feeds the same way (CheckFeed).
TEST(ParallelExecutorErrorTest, ReferenceExecutorRejectsTheSameFeeds) {
  Pipeline p;
  BuildPipeline(&p);
  Scope scope;
  Executor exe;
  auto step = exe.Prepare(p.main.desc(), &scope);
  auto expect_error = [&](const FeedList& feeds, const std::string& part) {
    try {
      exe.Run(*step, feeds, {p.y.name});
      ADD_FAILURE() << "expected an error mentioning " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error({{"x", testing::MakeTensor<float>({1, 4}, {1, 2, 3, 4})}},
               "has shape [1, 4] but the variable is declared [-1, 3]");
  expect_error({{"x", testing::MakeTensor<double>({1, 3}, {1, 2, 3})}}, "float64");
  expect_error({{"nope", Row(1)}}, "feed \"nope\" is not a variable");
  expect_error({{"x", Tensor()}}, "feed \"x\" holds no value");
  EXPECT_EQ(exe.Run(*step, {{"x", Row(1)}}, {p.y.name}).size(), 1u);
}

TEST(ParallelExecutorErrorTest, DestroyingTheExecutorMidRunIsSafe) {
  Pipeline p;
  BuildPipeline(&p, /*sleep_ms=*/100);
  Scope scope;
  std::future<std::vector<Tensor>> future;
  {
    ExecutionStrategy strategy;
    strategy.num_threads = 2;
    ParallelExecutor exe(p.main.desc(), &scope, {.strategy = strategy});
    future = exe.RunAsync({{"x", Row(1)}}, {p.y.name});
  }  // destroyed while test_checked_copy sleeps
  ASSERT_EQ(future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  try {
    future.get();  // the iteration either finished or was cancelled: both are fine
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
    EXPECT_NE(std::string(e.what()).find("shut down"), std::string::npos) << e.what();
  }
  // The process stays healthy: a new executor on the same scope works.
  ParallelExecutor again(p.main.desc(), &scope);
  EXPECT_EQ(testing::ToDoubles(again.Run({{"x", Row(2)}}, {p.y.name})[0]),
            (std::vector<double>{4, 2, 4}));
}

TEST(ParallelExecutorErrorTest, WatchdogReportsTheWaitingOpAndRunTimesOut) {
  Pipeline p;
  BuildPipeline(&p);
  Scope scope;
  ReportLog log;
  ParallelExecutor exe(p.main.desc(), &scope,
                       {.strategy = log.Strategy(std::chrono::milliseconds(200))});
  exe.WithholdFeedsForTesting({"x"});
  const auto start = std::chrono::steady_clock::now();
  try {
    exe.Run({{"x", Row(1)}}, {p.y.name});
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    const std::string what = e.what();
    EXPECT_NE(what.find("block 0, op 0 (scale)"), std::string::npos) << what;
    EXPECT_NE(what.find("input \"x\" from feed \"x\""), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(log.Text().find("op 0 (scale)"), std::string::npos) << log.Text();
  exe.WithholdFeedsForTesting({});
  EXPECT_EQ(testing::ToDoubles(exe.Run({{"x", Row(1)}}, {p.y.name})[0]),
            (std::vector<double>{2, 2, 4}));
}

TEST(ParallelExecutorErrorTest, WatchdogCallsASlowKernelSlowNotStuck) {
  Pipeline p;
  BuildPipeline(&p, /*sleep_ms=*/400);
  Scope scope;
  ReportLog log;
  ParallelExecutor exe(p.main.desc(), &scope,
                       {.strategy = log.Strategy(std::chrono::milliseconds(100))});
  EXPECT_EQ(testing::ToDoubles(exe.Run({{"x", Row(1)}}, {p.y.name})[0]),
            (std::vector<double>{2, 2, 4}));
  EXPECT_NE(log.Text().find("running now"), std::string::npos) << log.Text();
  EXPECT_NE(log.Text().find("test_checked_copy"), std::string::npos) << log.Text();
}

// -- iterations in flight ----------------------------------------------------------

TEST(ParallelExecutorTest, InferenceRunsSeveralIterationsInFlightTrainingOne) {
  Mlp m;
  BuildMlp(&m);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.max_iterations_in_flight = 4;
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  ParallelExecutor training(m.main.desc(), &scope, {.strategy = strategy});
  EXPECT_EQ(training.max_iterations_in_flight(), 1);

  // Forward only: no persistable is written, so iterations may overlap.
  Program inference, inference_startup;
  Builder b(&inference, &inference_startup, 7);
  Var x = b.Data("x", {-1, 12});
  Var h = b.Fc(b.Fc(x, 16, Activation::kRelu), 4, Activation::kSoftmax);
  Scope inference_scope, ref_scope;
  Executor reference;
  reference.Run(inference_startup.desc(), &inference_scope);
  reference.Run(inference_startup.desc(), &ref_scope);
  ParallelExecutor exe(inference.desc(), &inference_scope, {.strategy = strategy});
  EXPECT_EQ(exe.max_iterations_in_flight(), 4);
  std::vector<std::future<std::vector<Tensor>>> futures;
  std::vector<Tensor> inputs;
  for (int i = 0; i < 24; ++i) {
    inputs.push_back(RandomTensor({5, 12}, 300 + i, -1, 1, DataType::kFloat32));
    futures.push_back(exe.RunAsync({{"x", inputs.back()}}, {h.name}));
  }
  for (int i = 0; i < 24; ++i) {
    const auto want = reference.Run(inference.desc(), &ref_scope, {{"x", inputs[i]}}, {h.name});
    const auto got = futures[i].get();
    EXPECT_TRUE(testing::BitEqual(want[0], got[0])) << "request " << i;
  }
}

}  // namespace
}  // namespace rill
