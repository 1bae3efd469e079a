// Tests of elementwise_sub and its gradient.
#include "tests/ops/math/elementwise_test_util.h"

namespace rill::testing {
namespace {

TEST(ElementwiseSubOpTest, SubtractsAlongAxisOne) {
  auto out = RunOp({"elementwise_sub",
                    {{"X", {MakeTensor<double>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}},
                     {"Y", {MakeTensor<double>({2}, {1, 10})}}},
                    {{"Out", 1}},
                    [](proto::OpDesc* op) { SetAttr(op, "axis", 1); }});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{0, 1, -7, -6, 4, 5, -3, -2}));
}

TEST(ElementwiseSubOpTest, MatchesReferenceOnEveryBroadcast) {
  ExpectForwardMatchesReference("elementwise_sub", [](double x, double y) { return x - y; });
}

TEST(ElementwiseSubOpTest, GradientMatchesNumeric) { ExpectGradientsMatchNumeric("elementwise_sub"); }

TEST(ElementwiseSubOpTest, MismatchedShapesThrow) { ExpectMismatchedShapesThrow("elementwise_sub"); }

}  // namespace
}  // namespace rill::testing
