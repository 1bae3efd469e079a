// Tests of elementwise_add and its gradient (broadcast cases in elementwise_test_util.h).
#include "tests/ops/math/elementwise_test_util.h"

namespace rill::testing {
namespace {

TEST(ElementwiseAddOpTest, AddsABiasToEveryRowFloat32) {
  auto out = RunOp({"elementwise_add",
                    {{"X", {MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})}},
                     {"Y", {MakeTensor<float>({3}, {10, 20, 30})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kFloat32);
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseAddOpTest, MatchesReferenceOnEveryBroadcast) {
  ExpectForwardMatchesReference("elementwise_add", [](double x, double y) { return x + y; });
}

TEST(ElementwiseAddOpTest, GradientMatchesNumeric) { ExpectGradientsMatchNumeric("elementwise_add"); }

TEST(ElementwiseAddOpTest, BiasGradientSumsOverRows) {
  auto out = RunOp({"elementwise_add_grad",
                    {{"X", {MakeTensor<float>({2, 2}, {0, 0, 0, 0})}},
                     {"Y", {MakeTensor<float>({2}, {0, 0})}},
                     {"Out@GRAD", {MakeTensor<float>({2, 2}, {1, 2, 3, 4})}}},
                    {{"X@GRAD", 1}, {"Y@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(ToDoubles(out["Y@GRAD"][0]), (std::vector<double>{4, 6}));
}

TEST(ElementwiseAddOpTest, MissingOutputGradientMeansZero) {
  auto out = RunOp({"elementwise_add_grad",
                    {{"X", {MakeTensor<float>({2}, {1, 2})}}, {"Y", {MakeTensor<float>({1}, {3})}}},
                    {{"X@GRAD", 1}, {"Y@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 0}));
  EXPECT_EQ(ToDoubles(out["Y@GRAD"][0]), (std::vector<double>{0}));
}

TEST(ElementwiseAddOpTest, MismatchedShapesThrow) { ExpectMismatchedShapesThrow("elementwise_add"); }

TEST(ElementwiseAddOpTest, MixedTypesThrow) {
  EXPECT_THROW(RunOp({"elementwise_add",
                      {{"X", {MakeTensor<float>({2}, {1, 2})}}, {"Y", {MakeTensor<double>({2}, {1, 2})}}},
                      {{"Out", 1}},
                      {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
