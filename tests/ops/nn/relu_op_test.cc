// Tests of relu and relu_grad.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

// Random float64 values with |x| >= 0.1, away from relu's kink at 0.
Tensor AwayFromZero(const Shape& shape, uint64_t seed) {
  Tensor t = RandomTensor(shape, seed);
  double* p = t.mutable_data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] < 0 ? p[i] - 0.1 : p[i] + 0.1;
  return t;
}

TEST(ReluOpTest, ZeroesNegativesFloat32) {
  auto out = RunOp({"relu",
                    {{"X", {MakeTensor<float>({2, 3}, {-1, 0, 2, -0.5f, 3, 0.25f})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kFloat32);
  EXPECT_EQ(out["Out"][0].shape(), (Shape{2, 3}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{0, 0, 2, 0, 3, 0.25}));
}

TEST(ReluOpTest, ZeroesNegativesFloat64) {
  auto out = RunOp(
      {"relu", {{"X", {MakeTensor<double>({4}, {-1e-300, 1e-300, -7, 7})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{0, 1e-300, 0, 7}));
}

TEST(ReluOpTest, GradOpReadsOutNotX) {
  proto::OpDesc fwd;
  fwd.set_type("relu");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  auto grads = GetOpSchema("relu").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "relu_grad");
  EXPECT_EQ(InputVars(grads[0], "Out"), (std::vector<std::string>{"y"}));
  EXPECT_EQ(InputVars(grads[0], "Out@GRAD"), (std::vector<std::string>{"y@GRAD"}));
  EXPECT_TRUE(InputVars(grads[0], "X").empty());
  EXPECT_EQ(OutputVars(grads[0], "X@GRAD"), (std::vector<std::string>{"x@GRAD"}));
}

TEST(ReluOpTest, GradKernelPassesGradientWherePositive) {
  auto out = RunOp({"relu_grad",
                    {{"Out", {MakeTensor<float>({4}, {0, 2, 0, 0.5f})}},
                     {"Out@GRAD", {MakeTensor<float>({4}, {10, 20, 30, 40})}}},
                    {{"X@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 20, 0, 40}));
}

TEST(ReluOpTest, MissingOutputGradientMeansZero) {
  auto out =
      RunOp({"relu_grad", {{"Out", {MakeTensor<float>({3}, {1, 2, 3})}}}, {{"X@GRAD", 1}}, {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 0, 0}));
}

TEST(ReluOpTest, GradientMatchesNumeric) {
  GradientCheck("relu").Input("X", AwayFromZero({7}, 1)).Output("Out").Run();
  GradientCheck("relu").Input("X", AwayFromZero({3, 4}, 2)).Output("Out").Run();
  GradientCheck("relu").Input("X", AwayFromZero({2, 3, 4}, 3)).Output("Out").Run();
}

TEST(ReluOpTest, MismatchedGradientShapeThrows) {
  EXPECT_THROW(RunOp({"relu_grad",
                      {{"Out", {MakeTensor<float>({2, 3}, {})}},
                       {"Out@GRAD", {MakeTensor<float>({3, 2}, {})}}},
                      {{"X@GRAD", 1}},
                      {}}),
               Error);
}

TEST(ReluOpTest, IntegerInputThrows) {
  EXPECT_THROW(RunOp({"relu", {{"X", {MakeTensor<int64_t>({2}, {1, -1})}}}, {{"Out", 1}}, {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
