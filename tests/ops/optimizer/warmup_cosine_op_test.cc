// Tests of warmup_cosine_decay and the WarmupCosineDecay schedule: the rates
// of successive steps against values worked out by hand (numpy), on the
// reference and the actor executor (two places: each counts its own steps),
// float64 rates, a schedule that trains, and refused attributes and operands.
#include <gtest/gtest.h>

#include <vector>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/validate.h"

namespace rill {
namespace {

// Base 0.1, 3 warm-up steps, a cosine over 4 steps down to 0.1 * base: the
// rates of steps 1 to 9 as float32 (computed in double with numpy, then
// rounded).
const std::vector<float> kRates = {
    0.03333333507180214f,  0.06666667014360428f,  0.10000000149011612f,
    0.08681980520486832f,  0.054999999701976776f, 0.023180194199085236f,
    0.009999999776482582f, 0.009999999776482582f, 0.009999999776482582f};

struct Schedule {
  Program main, startup;
  std::string rate;
};

void BuildSchedule(Schedule* s, DataType dtype = DataType::kFloat32) {
  Builder b(&s->main, &s->startup);
  const Var base = b.Persistable("base_rate", {1}, 0.1f, dtype);
  s->rate = WarmupCosineDecay(3, 4, 0.1f)(b, base).name;
}

TEST(WarmupCosineTest, RatesOfSuccessiveStepsOnTheReferenceExecutor) {
  Schedule s;
  BuildSchedule(&s);
  Scope scope;
  Executor exe;
  exe.Run(s.startup.desc(), &scope);
  for (size_t step = 0; step < kRates.size(); ++step) {
    const auto out = exe.Run(s.main.desc(), &scope, {}, {s.rate});
    ASSERT_EQ(out[0].dtype(), DataType::kFloat32);
    EXPECT_FLOAT_EQ(out[0].data<float>()[0], kRates[step]) << "step " << step + 1;
  }
  // The counter is persistable state: a checkpoint carries it.
  EXPECT_EQ(scope.GetTensor("lr_step_0").data<float>()[0], 9.0f);
}

TEST(WarmupCosineTest, EachPlaceOfTheActorExecutorCountsTheSameSteps) {
  Schedule s;
  BuildSchedule(&s);
  Scope scope;
  Executor(Place::Cpu()).Run(s.startup.desc(), &scope);
  ParallelExecutor exe(s.main.desc(), &scope, {.places = ParsePlaces("cpu:2")});
  for (size_t step = 0; step < kRates.size(); ++step) {
    const auto out = exe.Run({}, {s.rate});
    EXPECT_FLOAT_EQ(out[0].data<float>()[0], kRates[step]) << "step " << step + 1;
  }
}

TEST(WarmupCosineTest, AFloat64BaseGivesAFloat64Rate) {
  Program main, startup;
  Builder b(&main, &startup);
  const Var base = b.Persistable("base_rate", {1}, 0.25f, DataType::kFloat64);
  const std::string rate = WarmupCosineDecay(0, 2)(b, base).name;
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  // No warm-up: step 1 is half-way down the cosine, step 2 at the end.
  for (double want : {0.125, 0.0, 0.0}) {
    const auto out = exe.Run(main.desc(), &scope, {}, {rate});
    ASSERT_EQ(out[0].dtype(), DataType::kFloat64);
    EXPECT_DOUBLE_EQ(out[0].data<double>()[0], want);
  }
}

// SGD on one weight with the gradient of w^2 / 2 (= w): each step multiplies
// w by (1 - rate), so after the schedule's steps w is the product.
TEST(WarmupCosineTest, AnOptimizerUsesTheScheduledRates) {
  Program main, startup;
  Builder b(&main, &startup);
  const Var x = b.Data("x", {-1, 1});
  // Mul is elementwise: y = x * w.
  const Var weight = b.Parameter("w", {1}, Initializer::Constant(2));
  const Var y = b.Mul(x, weight);
  const Var loss = b.Mean(b.Scale(b.Mul(y, y), 0.5f));
  SGD sgd(0.1f);
  sgd.set_learning_rate_schedule(WarmupCosineDecay(3, 4, 0.1f));
  sgd.Minimize(b, loss);
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  Tensor one(DataType::kFloat32, {1, 1});
  one.Fill(1.0);
  double w = 2;
  for (float rate : kRates) {
    exe.Run(main.desc(), &scope, {{"x", one}}, {});
    w *= 1 - static_cast<double>(rate);
  }
  EXPECT_NEAR(scope.GetTensor("w").data<float>()[0], w, 1e-6);
}

TEST(WarmupCosineTest, BadAttributesAndOperandsAreRefused) {
  EXPECT_THROW(WarmupCosineDecay(-1, 4), Error);
  EXPECT_THROW(WarmupCosineDecay(3, 0), Error);
  EXPECT_THROW(WarmupCosineDecay(3, 4, 1.5f), Error);
  Schedule s;
  BuildSchedule(&s);
  proto::ProgramDesc bad = s.main.desc();
  for (auto& op : *bad.mutable_blocks(0)->mutable_ops()) {
    if (op.type() == "warmup_cosine_decay") SetAttr(&op, "decay_steps", 0);
  }
  try {
    Validate(bad);
    ADD_FAILURE() << "decay_steps 0 validated";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("decay_steps"), std::string::npos) << e.what();
  }
  Program main, startup;
  Builder b(&main, &startup);
  const Var base = b.Persistable("base_rate", {2}, 0.1f);  // two elements
  EXPECT_THROW(WarmupCosineDecay(1, 1)(b, base), Error);
}

}  // namespace
}  // namespace rill
