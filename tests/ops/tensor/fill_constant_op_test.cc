// Tests of fill_constant.
#include <gtest/gtest.h>

#include "rill/error.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

std::map<std::string, std::vector<Tensor>> Fill(const std::vector<int64_t>& shape,
                                                const std::string& dtype, float value) {
  return RunOp({"fill_constant", {}, {{"Out", 1}}, [&](proto::OpDesc* op) {
                  SetAttr(op, "shape", shape);
                  SetAttr(op, "dtype", dtype);
                  SetAttr(op, "value", value);
                }});
}

TEST(FillConstantOpTest, FillsFloat32) {
  auto out = Fill({2, 3}, "float32", 2.5f);
  const Tensor& t = out["Out"][0];
  EXPECT_EQ(t.dtype(), DataType::kFloat32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(ToDoubles(t), std::vector<double>(6, 2.5));
}

TEST(FillConstantOpTest, FillsEveryType) {
  EXPECT_EQ(Fill({3}, "float64", -0.25f)["Out"][0].dtype(), DataType::kFloat64);
  EXPECT_EQ(ToDoubles(Fill({3}, "float64", -0.25f)["Out"][0]), std::vector<double>(3, -0.25));
  auto i32 = Fill({2, 2}, "int32", 7.0f)["Out"][0];
  EXPECT_EQ(i32.dtype(), DataType::kInt32);
  EXPECT_EQ(ToDoubles(i32), std::vector<double>(4, 7));
  auto i64 = Fill({1}, "int64", -3.0f)["Out"][0];
  EXPECT_EQ(i64.dtype(), DataType::kInt64);
  EXPECT_EQ(i64.data<int64_t>()[0], -3);
}

// The float32 attribute 0.1f means the decimal 0.1: float64 outputs hold 0.1
// itself, float32 outputs the float nearest to it.
TEST(FillConstantOpTest, ReadsTheValueAsTheDecimalItStandsFor) {
  EXPECT_EQ(Fill({2}, "float64", 0.1f)["Out"][0].data<double>()[1], 0.1);
  EXPECT_EQ(Fill({2}, "float64", 0.9f)["Out"][0].data<double>()[0], 0.9);
  EXPECT_EQ(Fill({2}, "float64", 1e-8f)["Out"][0].data<double>()[0], 1e-8);
  EXPECT_EQ(Fill({2}, "float32", 0.1f)["Out"][0].data<float>()[0], 0.1f);
  EXPECT_EQ(Fill({1}, "int64", 16777216.0f)["Out"][0].data<int64_t>()[0], 16777216);
}

TEST(FillConstantOpTest, DefaultsToFloat32Zeros) {
  auto out = RunOp({"fill_constant", {}, {{"Out", 1}}, [](proto::OpDesc* op) {
                      SetAttr(op, "shape", std::vector<int64_t>{4});
                    }});
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kFloat32);
  EXPECT_EQ(ToDoubles(out["Out"][0]), std::vector<double>(4, 0));
}

TEST(FillConstantOpTest, EmptyShapes) {
  auto empty = Fill({0, 3}, "float32", 1.0f)["Out"][0];
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  EXPECT_EQ(empty.numel(), 0);
  auto scalar = Fill({}, "float64", 4.0f)["Out"][0];
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(ToDoubles(scalar), std::vector<double>{4});
}

TEST(FillConstantOpTest, RejectsBadAttributes) {
  EXPECT_THROW(Fill({2, -1}, "float32", 1.0f), Error);
  EXPECT_THROW(Fill({2}, "float16", 1.0f), Error);
  EXPECT_THROW(RunOp({"fill_constant", {}, {{"Out", 1}}, {}}), Error);  // no shape
}

}  // namespace
}  // namespace rill::testing
