// Tests of sqrt and sqrt_grad.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(SqrtOpTest, TakesSquareRoots) {
  auto out = RunOp({"sqrt", {{"X", {MakeTensor<double>({3}, {4, 0.25, 2})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{2, 0.5, std::sqrt(2.0)}));
}

TEST(SqrtOpTest, NegativeInputIsNan) {
  auto out = RunOp({"sqrt", {{"X", {MakeTensor<float>({1}, {-1})}}}, {{"Out", 1}}, {}});
  EXPECT_TRUE(std::isnan(out["Out"][0].GetAsDouble(0)));
}

TEST(SqrtOpTest, GradientMatchesNumeric) {
  // Inputs in [0.5, 2], away from the infinite slope at 0.
  GradientCheck("sqrt").Input("X", RandomTensor({6}, 1, 0.5, 2)).Output("Out").Run();
  GradientCheck("sqrt").Input("X", RandomTensor({2, 3}, 2, 0.5, 2)).Output("Out").Run();
}

}  // namespace
}  // namespace rill::testing
