// Tests of concat and concat_grad.
#include <gtest/gtest.h>

#include <algorithm>

#include "rill/backward.h"
#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

Tensor Concat(const std::vector<Tensor>& xs, int axis) {
  return RunOp({"concat", {{"X", xs}}, {{"Out", 1}}, [axis](proto::OpDesc* op) {
                  SetAttr(op, "axis", axis);
                }})["Out"][0];
}

TEST(ConcatOpTest, JoinsRows) {
  const Tensor out =
      Concat({MakeTensor<float>({2, 2}, {1, 2, 3, 4}), MakeTensor<float>({1, 2}, {5, 6})}, 0);
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(out.dtype(), DataType::kFloat32);
  EXPECT_EQ(ToDoubles(out), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(ConcatOpTest, JoinsColumnsWithNegativeAxis) {
  const Tensor out =
      Concat({MakeTensor<int64_t>({2, 1}, {1, 2}), MakeTensor<int64_t>({2, 2}, {3, 4, 5, 6})}, -1);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  EXPECT_EQ(ToDoubles(out), (std::vector<double>{1, 3, 4, 2, 5, 6}));
}

TEST(ConcatOpTest, MiddleAxisMatchesReference) {
  const Tensor a = RandomTensor({2, 1, 3}, 1);
  const Tensor b = RandomTensor({2, 2, 3}, 2);
  const Tensor c = RandomTensor({2, 3, 3}, 3);
  const Tensor out = Concat({a, b, c}, 1);
  ASSERT_EQ(out.shape(), (Shape{2, 6, 3}));
  const auto va = ToDoubles(a), vb = ToDoubles(b), vc = ToDoubles(c), vo = ToDoubles(out);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 6; ++j) {
      for (int k = 0; k < 3; ++k) {
        double want;
        if (j < 1) {
          want = va[(i * 1 + j) * 3 + k];
        } else if (j < 3) {
          want = vb[(i * 2 + j - 1) * 3 + k];
        } else {
          want = vc[(i * 3 + j - 3) * 3 + k];
        }
        EXPECT_EQ(vo[(i * 6 + j) * 3 + k], want) << i << " " << j << " " << k;
      }
    }
  }
}

TEST(ConcatOpTest, InfersUnknownBatch) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 3});
  Var y = b.Data("y", {-1, 2});
  EXPECT_EQ(b.Concat({x, y}, 1).shape, (Shape{-1, 5}));
  EXPECT_EQ(b.Concat({x, x}, 0).shape, (Shape{-1, 3}));
}

TEST(ConcatOpTest, GradientMatchesNumeric) {
  GradientCheck("concat")
      .Inputs("X", {RandomTensor({2, 3}, 1), RandomTensor({1, 3}, 2)})
      .Output("Out")
      .Run();
  GradientCheck("concat")
      .Inputs("X",
              {RandomTensor({2, 1, 2}, 3), RandomTensor({2, 3, 2}, 4), RandomTensor({2, 2, 2}, 5)})
      .Output("Out")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "axis", 1); })
      .Run();
  GradientCheck("concat")
      .Inputs("X", {RandomTensor({3, 2}, 6), RandomTensor({3, 4}, 7)})
      .Output("Out")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "axis", -1); })
      .Run();
}

// concat(x, w) with only w trainable: append_backward binds X@GRAD to w's
// gradient alone, and concat_grad must pair it with the second input.
TEST(ConcatOpTest, GradientOfOnlyTheInputsThatNeedOne) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var x = b.Data("x", {-1, 3});
  Var w = b.Parameter("w", {2, 3}, Initializer::Uniform(-1, 1));
  Var joined = b.Concat({x, w}, 0);
  Var flat = b.Reshape(joined, {1, -1});
  auto top = b.AppendOp("top_k", {{"X", {flat}}}, {{"Out", 1}, {"Indices", 1}},
                        [](proto::OpDesc* op) { SetAttr(op, "k", 1); });
  auto pairs = AppendBackward(&main, top[0].name);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].grad, "w@GRAD");

  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  Tensor fed(DataType::kFloat32, {2, 3});
  fed.Fill(-10);  // below every w, so the maximum is in w
  auto out = exe.Run(main.desc(), &scope, {{"x", fed}}, {"w", "w@GRAD"});
  const auto wv = ToDoubles(out[0]);
  const auto argmax = std::max_element(wv.begin(), wv.end()) - wv.begin();
  std::vector<double> want(6, 0);
  want[static_cast<size_t>(argmax)] = 1;
  EXPECT_EQ(ToDoubles(out[1]), want);
}

TEST(ConcatOpTest, MissingOutputGradientIsZero) {
  auto out = RunOp({"concat_grad",
                    {{"X", {RandomTensor({1, 2}, 1), RandomTensor({2, 2}, 2)}}},
                    {{"X@GRAD", 2}},
                    {}});
  EXPECT_EQ(out["X@GRAD"][0].shape(), (Shape{1, 2}));
  EXPECT_EQ(ToDoubles(out["X@GRAD"][1]), std::vector<double>(4, 0));
}

TEST(ConcatOpTest, RejectsMismatchedInputs) {
  EXPECT_THROW(Concat({RandomTensor({2, 3}, 1), RandomTensor({2, 4}, 2)}, 0), Error);     // dim 1
  EXPECT_THROW(Concat({RandomTensor({2, 3}, 1), RandomTensor({2, 3, 1}, 2)}, 0), Error);  // rank
  EXPECT_THROW(Concat({RandomTensor({2, 3}, 1), RandomTensor({2, 3}, 2)}, 2), Error);     // axis
  EXPECT_THROW(
      Concat({RandomTensor({2, 3}, 1), RandomTensor({2, 3}, 2, -1, 1, DataType::kFloat32)}, 0),
      Error);  // types
}

}  // namespace
}  // namespace rill::testing
