// The gradient through While loops (while_op.cc, while_backward.h): against
// central differences on a loop with a recurrent state, an accumulator, a
// step read and a step write; the actor executor against the reference one,
// bit for bit; a loop that runs no pass; and the programs it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "rill/backward.h"
#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/small_models.h"

namespace rill {
namespace {

constexpr DataType kF64 = DataType::kFloat64;
constexpr int64_t kSteps = 4;

struct Loop {
  Program main, startup;
  Var loss;
  std::vector<std::string> params = {"w", "h0", "xs"};
};

// h = tanh(h w + xs[:, t]) for `passes` passes (of the kSteps xs holds),
// s += mean(h * h) each pass, out[:, t] = h; loss = s + mean(out * out) +
// mean(h). h starts as h0 (a parameter: its gradient flows back through
// every pass), s at 0.
void BuildLoop(Loop* loop, int passes) {
  Builder b(&loop->main, &loop->startup, 5);
  const Var w = b.Parameter("w", {3, 3}, Initializer::Uniform(-1, 1), kF64);
  const Var h0 = b.Parameter("h0", {2, 3}, Initializer::Uniform(-1, 1), kF64);
  const Var xs = b.Parameter("xs", {2, kSteps, 3}, Initializer::Uniform(-1, 1), kF64);
  const Var h = b.Scale(h0, 1);
  const Var s = b.Constant({1}, 0, kF64);
  const Var out = b.ConstantBatchSizeLike(h0, {-1, kSteps, 3}, 0, kF64);
  const Var i = b.Constant({1}, 0, DataType::kInt64);
  const Var n = b.Constant({1}, static_cast<float>(passes), DataType::kInt64);
  const Var more = b.LessThan(i, n);
  b.While(more, [&](Builder& b) {
    const Var next = b.Tanh(b.Add(b.MatMul(h, w), b.ReadStep(xs, i)));
    b.Assign(next, h);
    b.Assign(b.Add(s, b.Mean(b.Mul(next, next))), s);
    b.WriteStep(out, next, i);
    b.Increment(i);
    b.Assign(b.LessThan(i, n), more);
  });
  loop->loss = b.Sum({s, b.Mean(b.Mul(out, out)), b.Mean(h)});
}

double Loss(const Loop& loop, Scope* scope) {
  return Executor().Run(loop.main.desc(), scope, {}, {loop.loss.name})[0].GetAsDouble(0);
}

TEST(WhileLoopTest, GradientMatchesCentralDifferences) {
  for (int passes : {1, 3, 4}) {
    SCOPED_TRACE(::testing::Message() << passes << " passes");
    Loop loop;
    BuildLoop(&loop, passes);
    AppendBackward(&loop.main, loop.loss.name);
    Scope scope;
    Executor().Run(loop.startup.desc(), &scope);
    std::vector<std::string> grads;
    for (const auto& p : loop.params) grads.push_back(GradVarName(p));
    const std::vector<Tensor> analytic = Executor().Run(loop.main.desc(), &scope, {}, grads);
    constexpr double kDelta = 1e-6;
    for (size_t k = 0; k < loop.params.size(); ++k) {
      Tensor* param = scope.GetMutableTensor(loop.params[k]);
      for (int64_t e = 0; e < param->numel(); ++e) {
        double* value = param->mutable_data<double>() + e;
        const double saved = *value;
        *value = saved + kDelta;
        const double up = Loss(loop, &scope);
        *value = saved - kDelta;
        const double down = Loss(loop, &scope);
        *value = saved;
        const double numeric = (up - down) / (2 * kDelta);
        EXPECT_NEAR(analytic[k].GetAsDouble(e), numeric, 1e-7 * (1 + std::abs(numeric)))
            << grads[k] << " element " << e;
      }
    }
    // Steps past the passes get no gradient from xs; the others do.
    const Tensor& dxs = analytic[2];
    for (int64_t t = 0; t < kSteps; ++t) {
      double sum = 0;
      for (int64_t r = 0; r < 2; ++r) {
        for (int64_t j = 0; j < 3; ++j) sum += std::abs(dxs.GetAsDouble((r * kSteps + t) * 3 + j));
      }
      if (t < passes) {
        EXPECT_GT(sum, 1e-6) << "step " << t;
      } else {
        EXPECT_EQ(sum, 0.0) << "step " << t;
      }
    }
  }
}

TEST(WhileLoopTest, NoPassLeavesTheInitialStateGradientAndZeros) {
  Loop loop;
  BuildLoop(&loop, 0);
  AppendBackward(&loop.main, loop.loss.name);
  Scope scope;
  Executor().Run(loop.startup.desc(), &scope);
  const auto got = Executor().Run(loop.main.desc(), &scope, {}, {"w@GRAD", "h0@GRAD", "xs@GRAD"});
  // loss = mean(h0) + 0: d/dh0 = 1/6 each; w and xs are never read.
  for (int64_t e = 0; e < got[0].numel(); ++e) EXPECT_EQ(got[0].GetAsDouble(e), 0.0);
  for (int64_t e = 0; e < got[1].numel(); ++e) EXPECT_DOUBLE_EQ(got[1].GetAsDouble(e), 1.0 / 6);
  for (int64_t e = 0; e < got[2].numel(); ++e) EXPECT_EQ(got[2].GetAsDouble(e), 0.0);
}

// Adam on the looped LSTM for a few steps: the actor executor (2 threads)
// leaves the same bits as the reference executor.
TEST(WhileLoopTest, ActorExecutorTrainsLikeTheReference) {
  const testing::SmallModel model = testing::SmallLoopedLstm();
  std::vector<std::vector<Tensor>> results;
  for (bool actor : {false, true}) {
    Program main, startup;
    Builder b(&main, &startup, 3);
    const Var loss = model.build(b);
    Adam(0.01f).Minimize(b, loss);
    Scope scope;
    Executor().Run(startup.desc(), &scope);
    ExecutionStrategy strategy;
    strategy.num_threads = 2;
    strategy.blas_threads = 1;
    std::unique_ptr<ParallelExecutor> pe;
    std::unique_ptr<PreparedBlock> prepared;
    Executor reference;
    if (actor) {
      pe = std::make_unique<ParallelExecutor>(main.desc(), &scope,
                                              ParallelExecutorOptions{.strategy = strategy});
    } else {
      prepared = reference.Prepare(main.desc(), &scope);
    }
    std::vector<Tensor> values;
    for (int step = 0; step < 4; ++step) {
      const FeedList feeds = model.feeds(step, 6);
      const Tensor l =
          actor ? pe->Run(feeds, {loss.name})[0] : reference.Run(*prepared, feeds, {loss.name})[0];
      values.push_back(l.Clone());
    }
    for (const auto& var : main.desc().blocks(0).vars()) {
      if (var.parameter()) values.push_back(scope.GetTensor(var.name()).Clone());
    }
    results.push_back(std::move(values));
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t k = 0; k < results[0].size(); ++k) {
    ASSERT_EQ(results[0][k].bytes(), results[1][k].bytes()) << k;
    EXPECT_EQ(
        std::memcmp(results[0][k].raw_data(), results[1][k].raw_data(), results[0][k].bytes()), 0)
        << "value " << k << " differs";
  }
  EXPECT_GT(results[0].size(), 4u + 3u);  // losses, then w_x, w_h, b and the fc's
}

TEST(WhileLoopTest, BodyRunningBlocksOfItsOwnHasNoGradient) {
  Program main, startup;
  Builder b(&main, &startup);
  const Var w = b.Parameter("w", {2}, Initializer::Constant(0.5f), kF64);
  const Var h = b.Scale(w, 1);
  const Var more = b.Constant({1}, 0, DataType::kInt32);
  b.While(more, [&](Builder& b) {
    const Var inner = b.Constant({1}, 0, DataType::kInt32);
    b.While(inner, [&](Builder&) {});
    b.Assign(b.Mul(h, w), h);
  });
  try {
    AppendBackward(&main, b.Mean(h).name);
    FAIL() << "a nested loop was differentiated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(std::string(e.what()).find("runs blocks of its own"), std::string::npos) << e.what();
  }
}

TEST(WhileLoopTest, StepIndexOutsideTheSequenceIsNamed) {
  Program main, startup;
  Builder b(&main, &startup);
  const Var xs = b.Data("xs", {-1, 3, 2}, kF64);
  const Var i = b.Constant({1}, 3, DataType::kInt64);
  const Var step = b.ReadStep(xs, i);
  Scope scope;
  try {
    Executor().Run(main.desc(), &scope, {{"xs", testing::RandomTensor({1, 3, 2}, 1)}}, {step.name});
    FAIL() << "step 3 of 3 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is 3, outside [0, 3) of xs"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rill
