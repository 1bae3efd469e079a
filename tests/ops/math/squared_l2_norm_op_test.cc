// Tests of squared_l2_norm and its gradient.
#include <gtest/gtest.h>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(SquaredL2NormOpTest, SumsSquares) {
  auto out = RunOp(
      {"squared_l2_norm", {{"X", {MakeTensor<float>({2, 2}, {1, -2, 3, 0})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(out["Out"][0].shape(), (Shape{1}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{14}));
}

TEST(SquaredL2NormOpTest, GradientMatchesNumeric) {
  GradientCheck("squared_l2_norm").Input("X", RandomTensor({7}, 1)).Output("Out").Run();
  GradientCheck("squared_l2_norm").Input("X", RandomTensor({3, 2, 2}, 2)).Output("Out").Run();
}

}  // namespace
}  // namespace rill::testing
