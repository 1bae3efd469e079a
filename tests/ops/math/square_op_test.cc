// Tests of square and square_grad.
#include <gtest/gtest.h>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(SquareOpTest, SquaresEachElement) {
  auto out = RunOp({"square", {{"X", {MakeTensor<float>({3}, {-2, 0.5f, 3})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{4, 0.25, 9}));
}

TEST(SquareOpTest, GradientMatchesNumeric) {
  GradientCheck("square").Input("X", RandomTensor({6}, 1)).Output("Out").Run();
  GradientCheck("square").Input("X", RandomTensor({2, 3, 2}, 2)).Output("Out").Run();
}

TEST(SquareOpTest, MissingOutputGradientMeansZero) {
  auto out = RunOp({"square_grad", {{"X", {MakeTensor<float>({2}, {1, 2})}}}, {{"X@GRAD", 1}}, {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace rill::testing
