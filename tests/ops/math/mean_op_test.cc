// Tests of mean and mean_grad.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(MeanOpTest, AveragesEveryElementIntoOne) {
  auto out = RunOp({"mean", {{"X", {MakeTensor<float>({2, 2}, {1, 2, 3, 6})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(out["Out"][0].shape(), (Shape{1}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{3}));
}

TEST(MeanOpTest, EmptyInputIsNan) {
  auto out = RunOp({"mean", {{"X", {Tensor(DataType::kFloat64, {0, 4})}}}, {{"Out", 1}}, {}});
  EXPECT_TRUE(std::isnan(out["Out"][0].GetAsDouble(0)));
}

TEST(MeanOpTest, GradientSpreadsEvenly) {
  auto out = RunOp({"mean_grad",
                    {{"X", {MakeTensor<float>({4}, {9, 9, 9, 9})}},
                     {"Out@GRAD", {MakeTensor<float>({1}, {2})}}},
                    {{"X@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
}

TEST(MeanOpTest, GradientMatchesNumeric) {
  GradientCheck("mean").Input("X", RandomTensor({5}, 1)).Output("Out").Run();
  GradientCheck("mean").Input("X", RandomTensor({2, 3, 4}, 2)).Output("Out").Run();
}

}  // namespace
}  // namespace rill::testing
