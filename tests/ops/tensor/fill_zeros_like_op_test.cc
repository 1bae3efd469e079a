// Tests of fill_zeros_like.
#include <gtest/gtest.h>

#include "rill/error.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(FillZerosLikeOpTest, ZerosOfXShapeAndType) {
  auto out = RunOp({"fill_zeros_like", {{"X", {RandomTensor({2, 3}, 1)}}}, {{"Out", 1}}, {}});
  const Tensor& t = out["Out"][0];
  EXPECT_EQ(t.dtype(), DataType::kFloat64);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(ToDoubles(t), std::vector<double>(6, 0));
}

TEST(FillZerosLikeOpTest, IntegerTypes) {
  auto out =
      RunOp({"fill_zeros_like", {{"X", {MakeTensor<int64_t>({3}, {5, -6, 7})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kInt64);
  EXPECT_EQ(ToDoubles(out["Out"][0]), std::vector<double>(3, 0));
}

TEST(FillZerosLikeOpTest, NoGradientFlowsIntoX) {
  EXPECT_FALSE(GetOpSchema("fill_zeros_like").FindInput("X")->differentiable());
}

TEST(FillZerosLikeOpTest, RejectsBadInput) {
  // X is required and takes one variable.
  EXPECT_THROW(RunOp({"fill_zeros_like", {}, {{"Out", 1}}, {}}), Error);
  EXPECT_THROW(RunOp({"fill_zeros_like",
                      {{"X", {RandomTensor({2}, 1), RandomTensor({2}, 2)}}},
                      {{"Out", 1}},
                      {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
