// Tests of elementwise_div and its gradient.
#include <cmath>

#include "tests/ops/math/elementwise_test_util.h"

namespace rill::testing {
namespace {

TEST(ElementwiseDivOpTest, DividesByABias) {
  auto out = RunOp({"elementwise_div",
                    {{"X", {MakeTensor<double>({2, 2}, {1, 2, 3, 4})}},
                     {"Y", {MakeTensor<double>({2}, {2, 4})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{0.5, 0.5, 1.5, 1}));
}

TEST(ElementwiseDivOpTest, DivisionByZeroFollowsIeee) {
  auto out = RunOp({"elementwise_div",
                    {{"X", {MakeTensor<float>({2}, {1, 0})}}, {"Y", {MakeTensor<float>({1}, {0})}}},
                    {{"Out", 1}},
                    {}});
  auto got = ToDoubles(out["Out"][0]);
  EXPECT_TRUE(std::isinf(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
}

TEST(ElementwiseDivOpTest, MatchesReferenceOnEveryBroadcast) {
  ExpectForwardMatchesReference("elementwise_div", [](double x, double y) { return x / y; });
}

TEST(ElementwiseDivOpTest, GradientMatchesNumeric) {
  // Y is kept at least 0.5 from zero, away from the pole.
  ExpectGradientsMatchNumeric(
      "elementwise_div", [](const Shape& s, uint64_t seed) { return RandomTensor(s, seed); },
      [](const Shape& s, uint64_t seed) { return AwayFromZero(s, seed, 0.5); });
}

TEST(ElementwiseDivOpTest, MismatchedShapesThrow) { ExpectMismatchedShapesThrow("elementwise_div"); }

}  // namespace
}  // namespace rill::testing
