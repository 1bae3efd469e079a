// Tests of elementwise_max and its gradient.
#include "tests/ops/math/elementwise_test_util.h"

namespace rill::testing {
namespace {

TEST(ElementwiseMaxOpTest, TakesTheLargerOperand) {
  auto out = RunOp({"elementwise_max",
                    {{"X", {MakeTensor<float>({4}, {1, 5, -2, 3})}},
                     {"Y", {MakeTensor<float>({4}, {2, 4, -3, 3})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{2, 5, -2, 3}));
}

TEST(ElementwiseMaxOpTest, TiesSendTheGradientToY) {
  auto out = RunOp({"elementwise_max_grad",
                    {{"X", {MakeTensor<float>({3}, {1, 2, 3})}},
                     {"Y", {MakeTensor<float>({3}, {1, 5, 0})}},
                     {"Out@GRAD", {MakeTensor<float>({3}, {10, 20, 30})}}},
                    {{"X@GRAD", 1}, {"Y@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 0, 30}));
  EXPECT_EQ(ToDoubles(out["Y@GRAD"][0]), (std::vector<double>{10, 20, 0}));
}

TEST(ElementwiseMaxOpTest, MatchesReferenceOnEveryBroadcast) {
  ExpectForwardMatchesReference("elementwise_max",
                                [](double x, double y) { return x > y ? x : y; });
}

TEST(ElementwiseMaxOpTest, GradientMatchesNumeric) {
  // X in [0.1, 1] and Y in [-1, 0): never tied, so the max is smooth at every point.
  ExpectGradientsMatchNumeric(
      "elementwise_max", [](const Shape& s, uint64_t seed) { return RandomTensor(s, seed, 0.1, 1); },
      [](const Shape& s, uint64_t seed) { return RandomTensor(s, seed, -1, 0); });
  // And the other way round, so Y wins everywhere.
  ExpectGradientsMatchNumeric(
      "elementwise_max", [](const Shape& s, uint64_t seed) { return RandomTensor(s, seed, -1, 0); },
      [](const Shape& s, uint64_t seed) { return RandomTensor(s, seed, 0.1, 1); });
}

TEST(ElementwiseMaxOpTest, MismatchedShapesThrow) { ExpectMismatchedShapesThrow("elementwise_max"); }

}  // namespace
}  // namespace rill::testing
