// append_backward checked end to end: gradients of whole programs against
// central differences of the loss, in float64.
#include "rill/backward.h"

#include <gtest/gtest.h>

#include <cmath>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::RandomTensor;

// Builds forward ops with `build`, appends backward, and compares every
// parameter gradient element with (L(p + d) - L(p - d)) / 2d.
void CheckProgramGradients(const std::function<Var(Builder&)>& build, const FeedList& feeds,
                           double tolerance = 1e-6) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var loss = build(b);
  Program forward = main;
  auto pairs = AppendBackward(&main, loss.name);
  ASSERT_FALSE(pairs.empty());

  Executor exe;
  Scope scope;
  exe.Run(startup.desc(), &scope);
  std::vector<std::string> fetches;
  for (const auto& p : pairs) fetches.push_back(p.grad);
  auto grads = exe.Run(main.desc(), &scope, feeds, fetches);

  auto step = exe.Prepare(forward.desc(), &scope);
  auto loss_at = [&]() { return exe.Run(*step, feeds, {loss.name})[0].GetAsDouble(0); };
  constexpr double kDelta = 1e-6;
  for (size_t i = 0; i < pairs.size(); ++i) {
    Tensor* param = scope.GetMutableTensor(pairs[i].param);
    ASSERT_EQ(param->numel(), grads[i].numel()) << pairs[i].grad;
    for (int64_t k = 0; k < param->numel(); ++k) {
      double* p = param->mutable_data<double>() + k;
      const double saved = *p;
      *p = saved + kDelta;
      const double up = loss_at();
      *p = saved - kDelta;
      const double down = loss_at();
      *p = saved;
      const double numeric = (up - down) / (2 * kDelta);
      EXPECT_NEAR(grads[i].GetAsDouble(k), numeric, tolerance + 1e-5 * std::abs(numeric))
          << pairs[i].grad << " element " << k;
    }
  }
}

constexpr DataType kF64 = DataType::kFloat64;

TEST(BackwardTest, TwoLayerPerceptronWithSoftmaxLossMatchesNumericGradient) {
  FeedList feeds = {{"x", RandomTensor({5, 4}, 1)},
                    {"label", testing::MakeTensor<int64_t>({5, 1}, {0, 2, 1, 2, 0})}};
  CheckProgramGradients(
      [](Builder& b) {
        Var x = b.Data("x", {-1, 4}, kF64);
        Var label = b.Data("label", {-1, 1}, DataType::kInt64);
        Var h = b.Fc(x, 6, Activation::kTanh, 1, Initializer::XavierUniform(),
                     Initializer::Uniform(-0.1f, 0.1f));
        Var logits = b.Fc(h, 3, Activation::kNone, 1, Initializer::XavierUniform(),
                          Initializer::Uniform(-0.1f, 0.1f));
        return b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
      },
      feeds);
}

TEST(BackwardTest, VariableReadTwiceAccumulatesBothContributions) {
  // loss = mean((x W) * (x W) + x W): the product reads h twice and h is read again by the add.
  FeedList feeds = {{"x", RandomTensor({3, 4}, 2)}};
  CheckProgramGradients(
      [](Builder& b) {
        Var x = b.Data("x", {-1, 4}, kF64);
        Var h = b.Fc(x, 2, Activation::kNone, 1, Initializer::XavierUniform(),
                     Initializer::Uniform(-0.5f, 0.5f));
        Var sq = b.Mul(h, h);
        return b.Mean(b.Add(sq, h));
      },
      feeds);
}

TEST(BackwardTest, SquareErrorRegressionMatchesNumericGradient) {
  FeedList feeds = {{"x", RandomTensor({6, 3}, 3)}, {"y", RandomTensor({6, 1}, 4)}};
  CheckProgramGradients(
      [](Builder& b) {
        Var x = b.Data("x", {-1, 3}, kF64);
        Var y = b.Data("y", {-1, 1}, kF64);
        Var pred = b.Fc(x, 1, Activation::kSigmoid);
        return b.Mean(b.SquareErrorCost(pred, y));
      },
      feeds);
}

TEST(BackwardTest, NoGradientIsComputedForDataOrLabels) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 4});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(x, 3), label));
  auto pairs = AppendBackward(&main, loss.name);
  EXPECT_EQ(pairs.size(), 2u);
  for (const auto& op : main.desc().blocks(0).ops()) {
    for (const auto& slot : op.outputs()) {
      for (const auto& v : slot.vars()) {
        EXPECT_NE(v, "x@GRAD");
        EXPECT_NE(v, "label@GRAD");
      }
    }
  }
}

TEST(BackwardTest, LossMustBeAScalar) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 4});
  Var h = b.Fc(x, 3);
  try {
    AppendBackward(&main, h.name);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one-element"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rill

namespace rill {
namespace {

TEST(BackwardTest, SparseEmbeddingGradientIsDeclaredSelectedRows) {
  Program main, startup;
  Builder b(&main, &startup);
  Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
  Var loss = b.Mean(b.Embedding(ids, 10, 4, DataType::kFloat32, /*is_sparse=*/true));
  AppendBackward(&main, loss.name);
  const proto::VarDesc* grad = FindVarDesc(main.desc(), 0, "embedding_0.w@GRAD");
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(grad->kind(), proto::SELECTED_ROWS);
}

TEST(BackwardTest, ASparseTableLookedUpTwiceIsAClearError) {
  Program main, startup;
  Builder b(&main, &startup);
  Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
  Var first = b.Embedding(ids, 10, 4, DataType::kFloat32, true);
  Var second =
      b.AppendOp("lookup_table", {{"W", {b.Lookup("embedding_0.w")}}, {"Ids", {ids}}}, {{"Out", 1}},
                 [](proto::OpDesc* op) { SetAttr(op, "is_sparse", true); })[0];
  Var loss = b.Mean(b.Add(first, second));
  try {
    AppendBackward(&main, loss.name);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("looked up twice"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rill
