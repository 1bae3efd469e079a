// Tests of softmax and softmax_grad.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

// Softmax of each row of length `cols`, computed directly.
std::vector<double> ReferenceSoftmax(const std::vector<double>& x, size_t cols) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double sum = 0;
    for (size_t j = 0; j < cols; ++j) sum += std::exp(x[r * cols + j]);
    for (size_t j = 0; j < cols; ++j) y[r * cols + j] = std::exp(x[r * cols + j]) / sum;
  }
  return y;
}

TEST(SoftmaxOpTest, KnownValuesFloat32) {
  auto out = RunOp(
      {"softmax", {{"X", {MakeTensor<float>({2, 3}, {1, 2, 3, 0, 0, 0})}}}, {{"Out", 1}}, {}});
  ASSERT_EQ(out["Out"][0].dtype(), DataType::kFloat32);
  auto got = ToDoubles(out["Out"][0]);
  const std::vector<double> want = {
      0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(SoftmaxOpTest, LargeInputsDoNotOverflow) {
  auto out = RunOp(
      {"softmax", {{"X", {MakeTensor<double>({1, 3}, {1001, 1002, 1003})}}}, {{"Out", 1}}, {}});
  auto got = ToDoubles(out["Out"][0]);
  EXPECT_NEAR(got[0], 0.09003057317038046, 1e-14);
  EXPECT_NEAR(got[1], 0.24472847105479767, 1e-14);
  EXPECT_NEAR(got[2], 0.6652409557748219, 1e-14);
}

TEST(SoftmaxOpTest, LastAxisOfRank3MatchesReference) {
  Tensor x = RandomTensor({2, 3, 4}, 5, -4, 4);
  auto out = RunOp({"softmax", {{"X", {x}}}, {{"Out", 1}}, {}});
  ASSERT_EQ(out["Out"][0].shape(), (Shape{2, 3, 4}));
  auto got = ToDoubles(out["Out"][0]);
  auto want = ReferenceSoftmax(ToDoubles(x), 4);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << i;
}

TEST(SoftmaxOpTest, GradKernelMatchesFormula) {
  // dX = (dY - sum(dY * Y)) * Y with Y = [0.2, 0.3, 0.5], dY = [1, 2, 3]: sum = 2.3.
  auto out = RunOp({"softmax_grad",
                    {{"Out", {MakeTensor<double>({1, 3}, {0.2, 0.3, 0.5})}},
                     {"Out@GRAD", {MakeTensor<double>({1, 3}, {1, 2, 3})}}},
                    {{"X@GRAD", 1}},
                    {}});
  auto got = ToDoubles(out["X@GRAD"][0]);
  EXPECT_NEAR(got[0], -1.3 * 0.2, 1e-15);
  EXPECT_NEAR(got[1], -0.3 * 0.3, 1e-15);
  EXPECT_NEAR(got[2], 0.7 * 0.5, 1e-15);
}

TEST(SoftmaxOpTest, GradientMatchesNumeric) {
  GradientCheck("softmax").Input("X", RandomTensor({5}, 1, -2, 2)).Output("Out").Run();
  GradientCheck("softmax").Input("X", RandomTensor({3, 4}, 2, -2, 2)).Output("Out").Run();
  GradientCheck("softmax").Input("X", RandomTensor({2, 3, 5}, 3, -2, 2)).Output("Out").Run();
}

// Softmax of x [outer, len, inner] along its middle dim, computed directly;
// keep(o, j, i) false masks an element (Out 0; a row masked everywhere is 0).
template <class Keep>
std::vector<double> ReferenceAlongAxis(const std::vector<double>& x, int64_t outer, int64_t len,
                                       int64_t inner, Keep keep) {
  std::vector<double> y(x.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        if (keep(o, j, i)) sum += std::exp(x[(o * len + j) * inner + i]);
      }
      for (int64_t j = 0; j < len; ++j) {
        const int64_t at = (o * len + j) * inner + i;
        y[at] = keep(o, j, i) ? std::exp(x[at]) / sum : 0.0;
      }
    }
  }
  return y;
}

AttrSetter Axis(int axis) {
  return [axis](proto::OpDesc* op) { SetAttr(op, "axis", axis); };
}

TEST(SoftmaxOpTest, EveryAxisMatchesReference) {
  // X [2, 3, 4]: axis 0 is [1, 2, 12], 1 is [2, 3, 4], -1 is [6, 4, 1].
  const Tensor x = RandomTensor({2, 3, 4}, 7, -4, 4);
  const auto all = [](int64_t, int64_t, int64_t) { return true; };
  const struct {
    int axis;
    int64_t outer, len, inner;
  } cases[] = {{0, 1, 2, 12}, {1, 2, 3, 4}, {2, 6, 4, 1}, {-2, 2, 3, 4}, {-3, 1, 2, 12}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.axis);
    auto out = RunOp({"softmax", {{"X", {x}}}, {{"Out", 1}}, Axis(c.axis)});
    auto got = ToDoubles(out["Out"][0]);
    auto want = ReferenceAlongAxis(ToDoubles(x), c.outer, c.len, c.inner, all);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << i;
  }
}

// X [B, H, T, T] with a padding mask [B, 1, 1, T]: batch b keeps its first
// lengths[b] keys.
TEST(SoftmaxOpTest, PaddingMaskBroadcastsOverHeadsAndQueries) {
  const int64_t b = 2, h = 3, t = 4;
  const int64_t lengths[] = {3, 1};
  std::vector<double> mask_values;
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t k = 0; k < t; ++k) mask_values.push_back(k < lengths[i] ? 1.0 : 0.0);
  }
  Tensor x = RandomTensor({b, h, t, t}, 9, -3, 3);
  // A huge logit behind the mask must change nothing.
  x.mutable_data<double>()[3] = 1e300;
  const Tensor mask = MakeTensor<double>({b, 1, 1, t}, mask_values);
  auto out = RunOp({"softmax", {{"X", {x}}, {"Mask", {mask}}}, {{"Out", 1}}, {}});
  auto got = ToDoubles(out["Out"][0]);
  const auto keep = [&](int64_t row, int64_t k, int64_t) { return k < lengths[row / (h * t)]; };
  auto want = ReferenceAlongAxis(ToDoubles(x), b * h * t, t, 1, keep);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << i;
}

TEST(SoftmaxOpTest, MaskAlongAnInnerAxisAndAFullyMaskedRowGivesZeros) {
  // Softmax over axis 1 of X [2, 3, 2] with Mask [3, 2]: column 1 keeps only
  // element 2, column 0 nothing (all zeros, no NaN).
  const Tensor x = RandomTensor({2, 3, 2}, 11, -2, 2);
  const Tensor mask = MakeTensor<double>({3, 2}, {0, 0, 0, 0, 0, 1});
  auto out = RunOp({"softmax", {{"X", {x}}, {"Mask", {mask}}}, {{"Out", 1}}, Axis(1)});
  auto got = ToDoubles(out["Out"][0]);
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(got[(o * 3 + j) * 2 + 0], 0.0);
      EXPECT_EQ(got[(o * 3 + j) * 2 + 1], j == 2 ? 1.0 : 0.0);
    }
  }
}

TEST(SoftmaxOpTest, AnAllOnesMaskAndAPositiveLastAxisChangeNoBit) {
  const Tensor x = RandomTensor({3, 5, 7}, 13, -5, 5, DataType::kFloat32);
  const Tensor ones = MakeTensor<float>({7}, std::vector<float>(7, 1.0f));
  auto plain = RunOp({"softmax", {{"X", {x}}}, {{"Out", 1}}, {}})["Out"][0];
  auto masked = RunOp({"softmax", {{"X", {x}}, {"Mask", {ones}}}, {{"Out", 1}}, {}})["Out"][0];
  auto last = RunOp({"softmax", {{"X", {x}}}, {{"Out", 1}}, Axis(2)})["Out"][0];
  const float* p = plain.data<float>();
  for (int64_t i = 0; i < plain.numel(); ++i) {
    EXPECT_EQ(p[i], masked.data<float>()[i]) << i;
    EXPECT_EQ(p[i], last.data<float>()[i]) << i;
  }
}

TEST(SoftmaxOpTest, GradientMatchesNumericAlongEveryAxisAndWithAMask) {
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    GradientCheck("softmax")
        .Input("X", RandomTensor({2, 3, 4}, 20 + axis, -2, 2))
        .Output("Out")
        .Attrs(Axis(axis))
        .Run();
  }
  // A padding mask [2, 1, 1, 3] on X [2, 2, 3, 3], and a mask along axis 1
  // whose second column is masked everywhere (its gradient is 0).
  GradientCheck("softmax")
      .Input("X", RandomTensor({2, 2, 3, 3}, 30, -2, 2))
      .Input("Mask", MakeTensor<double>({2, 1, 1, 3}, {1, 1, 0, 1, 0, 0}))
      .Output("Out")
      .Run();
  GradientCheck("softmax")
      .Input("X", RandomTensor({2, 3, 2}, 31, -2, 2))
      .Input("Mask", MakeTensor<double>({3, 2}, {1, 0, 0, 0, 1, 0}))
      .Output("Out")
      .Attrs(Axis(1))
      .Run();
}

TEST(SoftmaxOpTest, BadAxisAndMaskThrowNamingTheShapes) {
  const Tensor x = RandomTensor({2, 3}, 1);
  const auto message = [](const OpRun& run) {
    try {
      RunOp(run);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string what = message({"softmax", {{"X", {x}}}, {{"Out", 1}}, Axis(2)});
  EXPECT_NE(what.find("axis 2 is outside [-2, 2)"), std::string::npos) << what;
  what = message({"softmax", {{"X", {x}}, {"Mask", {RandomTensor({2, 2}, 2)}}}, {{"Out", 1}}, {}});
  EXPECT_NE(what.find("Mask of shape [2, 2] does not broadcast to X of shape [2, 3]"),
            std::string::npos)
      << what;
  what = message({"softmax",
                  {{"X", {x}}, {"Mask", {RandomTensor({3}, 3, 0, 1, DataType::kFloat32)}}},
                  {{"Out", 1}},
                  {}});
  EXPECT_NE(what.find("want X's type"), std::string::npos) << what;
}

TEST(SoftmaxOpTest, GradOpDoesNotNeedX) {
  proto::OpDesc fwd;
  fwd.set_type("softmax");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  auto grads = GetOpSchema("softmax").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "softmax_grad");
  EXPECT_TRUE(InputVars(grads[0], "X").empty());
  EXPECT_EQ(OutputVars(grads[0], "X@GRAD"), (std::vector<std::string>{"x@GRAD"}));
  EXPECT_TRUE(InputVars(grads[0], "Mask").empty());
}

TEST(SoftmaxOpTest, GradOpKeepsTheAxis) {
  proto::OpDesc fwd;
  fwd.set_type("softmax");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  SetAttr(&fwd, "axis", 1);
  auto grads = GetOpSchema("softmax").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  const proto::Attr* axis = FindAttr(grads[0], "axis");
  ASSERT_NE(axis, nullptr);
  EXPECT_EQ(AttrValue<int64_t>(*axis), 1);
}

TEST(SoftmaxOpTest, ScalarInputThrows) {
  EXPECT_THROW(RunOp({"softmax", {{"X", {MakeTensor<float>({}, {1})}}}, {{"Out", 1}}, {}}), Error);
}

TEST(SoftmaxOpTest, MismatchedGradientShapeThrows) {
  EXPECT_THROW(RunOp({"softmax_grad",
                      {{"Out", {MakeTensor<float>({2, 3}, {})}},
                       {"Out@GRAD", {MakeTensor<float>({2, 4}, {})}}},
                      {{"X@GRAD", 1}},
                      {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
