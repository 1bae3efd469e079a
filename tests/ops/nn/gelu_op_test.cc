// Tests of gelu and gelu_grad.
#include <gtest/gtest.h>

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
