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
