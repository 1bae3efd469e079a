// Tests of gelu and gelu_grad.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(GeluOpTest, MatchesTheNormalCdfForm) {
  // Values of x * Phi(x) from the standard normal table.
  auto out =
      RunOp({"gelu", {{"X", {MakeTensor<double>({5}, {-3, -1, 0, 1, 2})}}}, {{"Out", 1}}, {}});
  const std::vector<double> want = {-3 * 0.0013498980316301, -1 * 0.15865525393145707, 0,
                                    0.8413447460685429, 2 * 0.9772498680518208};
  const std::vector<double> got = ToDoubles(out["Out"][0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-13) << i;
}

TEST(GeluOpTest, Float32AgreesWithFloat64) {
  const Tensor x64 = RandomTensor({3, 17}, 5, -4, 4);
  const Tensor x32 = RandomTensor({3, 17}, 5, -4, 4, DataType::kFloat32);
  auto a = ToDoubles(RunOp({"gelu", {{"X", {x64}}}, {{"Out", 1}}, {}})["Out"][0]);
  auto b = RunOp({"gelu", {{"X", {x32}}}, {{"Out", 1}}, {}})["Out"][0];
  EXPECT_EQ(b.dtype(), DataType::kFloat32);
  const auto bd = ToDoubles(b);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(bd[i], a[i], 1e-5) << i;
}

// float32 (glibc's vector erf and exp where there are: four values at a time,
// then a scalar tail) within a few float32 ulps of the float64 values, over
// [-10, 10] and odd lengths; NaN stays NaN.
TEST(GeluOpTest, Float32IsWithinAFewUlpsOfFloat64Everywhere) {
  for (int64_t n : {1, 3, 4, 7, 4001}) {
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[i] = n == 1 ? 0.5 : -10 + 20.0 * i / (n - 1);
    std::vector<float> narrow(values.begin(), values.end());
    const Tensor x32 = MakeTensor<float>({n}, narrow);
    std::vector<double> widened(narrow.begin(), narrow.end());  // the same inputs in float64
    const Tensor x64 = MakeTensor<double>({n}, widened);
    const Tensor dy32 = MakeTensor<float>({n}, std::vector<float>(static_cast<size_t>(n), 0.75f));
    const Tensor dy64 = MakeTensor<double>({n}, std::vector<double>(static_cast<size_t>(n), 0.75));
    const auto y32 = ToDoubles(RunOp({"gelu", {{"X", {x32}}}, {{"Out", 1}}, {}})["Out"][0]);
    const auto y64 = ToDoubles(RunOp({"gelu", {{"X", {x64}}}, {{"Out", 1}}, {}})["Out"][0]);
    const auto g32 = ToDoubles(RunOp(
        {"gelu_grad", {{"X", {x32}}, {"Out@GRAD", {dy32}}}, {{"X@GRAD", 1}}, {}})["X@GRAD"][0]);
    const auto g64 = ToDoubles(RunOp(
        {"gelu_grad", {{"X", {x64}}, {"Out@GRAD", {dy64}}}, {{"X@GRAD", 1}}, {}})["X@GRAD"][0]);
    for (int64_t i = 0; i < n; ++i) {
      // A few ulps of the result, or of the terms that cancel in it: 1 + erf
      // for negative x (float32's ulp of 1 is 1.2e-7), times 0.5 x and 0.75 dy.
      EXPECT_NEAR(y32[i], y64[i], 6e-7 * std::abs(y64[i]) + 2.5e-7 * std::abs(widened[i]))
          << "gelu(" << widened[i] << ")";
      EXPECT_NEAR(g32[i], g64[i], 6e-7 * std::abs(g64[i]) + 2.5e-7) << widened[i];
    }
  }
  const float nan = std::nanf("");
  const auto y = ToDoubles(RunOp({"gelu",
                                  {{"X", {MakeTensor<float>({5}, {nan, 1, 2, 3, nan})}}},
                                  {{"Out", 1}},
                                  {}})["Out"][0]);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[4]));
  EXPECT_FALSE(std::isnan(y[1]));
}

TEST(GeluOpTest, GradientMatchesNumeric) {
  GradientCheck("gelu").Input("X", RandomTensor({7}, 1, -3, 3)).Output("Out").Run();
  GradientCheck("gelu").Input("X", RandomTensor({2, 3, 4}, 2, -5, 5)).Output("Out").Run();
}

TEST(GeluOpTest, GradOpReadsXNotOut) {
  proto::OpDesc fwd;
  fwd.set_type("gelu");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  auto grads = GetOpSchema("gelu").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(InputVars(grads[0], "X"), (std::vector<std::string>{"x"}));
  EXPECT_TRUE(InputVars(grads[0], "Out").empty());
  EXPECT_EQ(OutputVars(grads[0], "X@GRAD"), (std::vector<std::string>{"x@GRAD"}));
}

TEST(GeluOpTest, MissingOutputGradientMeansZeroAndBadShapesThrow) {
  auto out =
      RunOp({"gelu_grad", {{"X", {MakeTensor<float>({3}, {1, 2, 3})}}}, {{"X@GRAD", 1}}, {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 0, 0}));
  EXPECT_THROW(RunOp({"gelu_grad",
                      {{"X", {MakeTensor<float>({2, 3}, {})}},
                       {"Out@GRAD", {MakeTensor<float>({3, 2}, {})}}},
                      {{"X@GRAD", 1}},
                      {}}),
               Error);
  EXPECT_THROW(RunOp({"gelu", {{"X", {MakeTensor<int64_t>({2}, {1, 2})}}}, {{"Out", 1}}, {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
