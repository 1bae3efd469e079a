// Tests of mul (matrix product after flattening) and mul_grad.
#include <gtest/gtest.h>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

// C = A B for row-major A [m, k] and B [k, n], straight from the definition.
std::vector<double> NaiveMatmul(const Tensor& a, const Tensor& b, int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) c[i * n + j] += a.GetAsDouble(i * k + p) * b.GetAsDouble(p * n + j);
    }
  }
  return c;
}

TEST(MulOpTest, KnownProductFloat32) {
  auto out = RunOp({"mul",
                    {{"X", {MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})}},
                     {"Y", {MakeTensor<float>({3, 2}, {7, 8, 9, 10, 11, 12})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(out["Out"][0].shape(), (Shape{2, 2}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{58, 64, 139, 154}));
}

TEST(MulOpTest, FlattensAtNumColDims) {
  Tensor x = RandomTensor({2, 3, 4}, 1);
  Tensor y = RandomTensor({4, 5}, 2);
  auto out = RunOp({"mul", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}},
                    [](proto::OpDesc* op) { SetAttr(op, "x_num_col_dims", 2); }});
  EXPECT_EQ(out["Out"][0].shape(), (Shape{2, 3, 5}));
  auto want = NaiveMatmul(x, y, 6, 4, 5);
  auto got = ToDoubles(out["Out"][0]);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;

  Tensor y4 = RandomTensor({3, 4, 2, 2}, 3);
  auto out2 = RunOp({"mul", {{"X", {x}}, {"Y", {y4}}}, {{"Out", 1}}, [](proto::OpDesc* op) {
                       SetAttr(op, "x_num_col_dims", 1);
                       SetAttr(op, "y_num_col_dims", 2);
                     }});
  EXPECT_EQ(out2["Out"][0].shape(), (Shape{2, 2, 2}));
  auto want2 = NaiveMatmul(x, y4, 2, 12, 4);
  auto got2 = ToDoubles(out2["Out"][0]);
  for (size_t i = 0; i < want2.size(); ++i) EXPECT_NEAR(got2[i], want2[i], 1e-12) << i;
}

TEST(MulOpTest, LargerProductMatchesNaiveFloat32) {
  Tensor x = RandomTensor({33, 70}, 4, -1, 1, DataType::kFloat32);
  Tensor y = RandomTensor({70, 17}, 5, -1, 1, DataType::kFloat32);
  auto out = RunOp({"mul", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}}, {}});
  auto want = NaiveMatmul(x, y, 33, 70, 17);
  auto got = ToDoubles(out["Out"][0]);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
}

TEST(MulOpTest, GradientMatchesNumeric) {
  GradientCheck("mul").Input("X", RandomTensor({3, 4}, 1)).Input("Y", RandomTensor({4, 5}, 2)).Output("Out").Run();
  GradientCheck("mul")
      .Input("X", RandomTensor({2, 3, 4}, 3))
      .Input("Y", RandomTensor({4, 2}, 4))
      .Output("Out")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "x_num_col_dims", 2); })
      .Run();
  GradientCheck("mul")
      .Input("X", RandomTensor({2, 6}, 5))
      .Input("Y", RandomTensor({2, 3, 3}, 6))
      .Output("Out")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "y_num_col_dims", 2); })
      .Run();
}

TEST(MulOpTest, EmptyBatchGivesEmptyOutputAndZeroWeightGradient) {
  auto out = RunOp({"mul_grad",
                    {{"X", {Tensor(DataType::kFloat32, {0, 3})}},
                     {"Y", {MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6})}},
                     {"Out@GRAD", {Tensor(DataType::kFloat32, {0, 2})}}},
                    {{"X@GRAD", 1}, {"Y@GRAD", 1}},
                    {}});
  EXPECT_EQ(out["X@GRAD"][0].shape(), (Shape{0, 3}));
  EXPECT_EQ(ToDoubles(out["Y@GRAD"][0]), (std::vector<double>(6, 0.0)));
}

TEST(MulOpTest, InnerDimMismatchThrowsNamingBothShapes) {
  try {
    RunOp({"mul",
           {{"X", {RandomTensor({2, 3}, 1)}}, {"Y", {RandomTensor({4, 2}, 2)}}},
           {{"Out", 1}},
           {}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 2]"), std::string::npos) << e.what();
  }
}

TEST(MulOpTest, BadNumColDimsThrows) {
  EXPECT_THROW(RunOp({"mul",
                      {{"X", {RandomTensor({2, 3}, 1)}}, {"Y", {RandomTensor({3, 2}, 2)}}},
                      {{"Out", 1}},
                      [](proto::OpDesc* op) { SetAttr(op, "x_num_col_dims", 2); }}),
               Error);
}

}  // namespace
}  // namespace rill::testing
