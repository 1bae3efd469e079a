// Tests of sigmoid and sigmoid_grad.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(SigmoidOpTest, MatchesFormulaFloat32) {
  const std::vector<float> x = {-2, -0.5f, 0, 0.5f, 2, 4};
  auto out = RunOp({"sigmoid", {{"X", {MakeTensor<float>({2, 3}, x)}}}, {{"Out", 1}}, {}});
  ASSERT_EQ(out["Out"][0].shape(), (Shape{2, 3}));
  auto got = ToDoubles(out["Out"][0]);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(got[i], 1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))), 1e-6) << i;
  }
  EXPECT_EQ(got[2], 0.5);
}

TEST(SigmoidOpTest, SaturatesWithoutNanFloat64) {
  auto out = RunOp(
      {"sigmoid", {{"X", {MakeTensor<double>({4}, {-1000, -30, 30, 1000})}}}, {{"Out", 1}}, {}});
  auto got = ToDoubles(out["Out"][0]);
  EXPECT_EQ(got[0], 0.0);
  EXPECT_NEAR(got[1], 9.357622968839299e-14, 1e-24);
  EXPECT_NEAR(got[2], 1.0, 1e-12);
  EXPECT_EQ(got[3], 1.0);
}

TEST(SigmoidOpTest, GradOpReadsOutNotX) {
  proto::OpDesc fwd;
  fwd.set_type("sigmoid");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  auto grads = GetOpSchema("sigmoid").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "sigmoid_grad");
  EXPECT_EQ(InputVars(grads[0], "Out"), (std::vector<std::string>{"y"}));
  EXPECT_EQ(InputVars(grads[0], "Out@GRAD"), (std::vector<std::string>{"y@GRAD"}));
  EXPECT_TRUE(InputVars(grads[0], "X").empty());
  EXPECT_EQ(OutputVars(grads[0], "X@GRAD"), (std::vector<std::string>{"x@GRAD"}));
}

TEST(SigmoidOpTest, GradKernelIsOutTimesOneMinusOut) {
  auto out = RunOp({"sigmoid_grad",
                    {{"Out", {MakeTensor<double>({3}, {0.5, 0.25, 0.9})}},
                     {"Out@GRAD", {MakeTensor<double>({3}, {2, 4, 10})}}},
                    {{"X@GRAD", 1}},
                    {}});
  auto got = ToDoubles(out["X@GRAD"][0]);
  EXPECT_NEAR(got[0], 2 * 0.25, 1e-15);
  EXPECT_NEAR(got[1], 4 * 0.1875, 1e-15);
  EXPECT_NEAR(got[2], 10 * 0.09, 1e-14);
}

TEST(SigmoidOpTest, GradientMatchesNumeric) {
  GradientCheck("sigmoid").Input("X", RandomTensor({6}, 1, -3, 3)).Output("Out").Run();
  GradientCheck("sigmoid").Input("X", RandomTensor({3, 4}, 2, -3, 3)).Output("Out").Run();
  GradientCheck("sigmoid").Input("X", RandomTensor({2, 2, 3}, 3, -3, 3)).Output("Out").Run();
}

TEST(SigmoidOpTest, MismatchedGradientShapeThrows) {
  EXPECT_THROW(
      RunOp({"sigmoid_grad",
             {{"Out", {MakeTensor<float>({4}, {})}}, {"Out@GRAD", {MakeTensor<float>({5}, {})}}},
             {{"X@GRAD", 1}},
             {}}),
      Error);
}

}  // namespace
}  // namespace rill::testing
