// Tests of tanh and tanh_grad.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(TanhOpTest, MatchesKnownValuesFloat32) {
  auto out =
      RunOp({"tanh", {{"X", {MakeTensor<float>({2, 2}, {0, 1, -1, 0.5f})}}}, {{"Out", 1}}, {}});
  auto got = ToDoubles(out["Out"][0]);
  EXPECT_EQ(got[0], 0.0);
  EXPECT_NEAR(got[1], 0.7615941559557649, 1e-6);
  EXPECT_NEAR(got[2], -0.7615941559557649, 1e-6);
  EXPECT_NEAR(got[3], 0.46211715726000974, 1e-6);
}

TEST(TanhOpTest, SaturatesFloat64) {
  auto out = RunOp({"tanh", {{"X", {MakeTensor<double>({2}, {-800, 800})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{-1, 1}));
}

TEST(TanhOpTest, GradOpReadsOutNotX) {
  proto::OpDesc fwd;
  fwd.set_type("tanh");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  auto grads = GetOpSchema("tanh").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "tanh_grad");
  EXPECT_EQ(InputVars(grads[0], "Out"), (std::vector<std::string>{"y"}));
  EXPECT_EQ(InputVars(grads[0], "Out@GRAD"), (std::vector<std::string>{"y@GRAD"}));
  EXPECT_TRUE(InputVars(grads[0], "X").empty());
  EXPECT_EQ(OutputVars(grads[0], "X@GRAD"), (std::vector<std::string>{"x@GRAD"}));
}

TEST(TanhOpTest, GradKernelIsOneMinusOutSquared) {
  auto out = RunOp({"tanh_grad",
                    {{"Out", {MakeTensor<double>({3}, {0, 0.5, -0.9})}},
                     {"Out@GRAD", {MakeTensor<double>({3}, {2, 4, 10})}}},
                    {{"X@GRAD", 1}},
                    {}});
  auto got = ToDoubles(out["X@GRAD"][0]);
  EXPECT_NEAR(got[0], 2.0, 1e-15);
  EXPECT_NEAR(got[1], 3.0, 1e-15);
  EXPECT_NEAR(got[2], 1.9, 1e-14);
}

TEST(TanhOpTest, GradientMatchesNumeric) {
  GradientCheck("tanh").Input("X", RandomTensor({5}, 1, -2, 2)).Output("Out").Run();
  GradientCheck("tanh").Input("X", RandomTensor({4, 3}, 2, -2, 2)).Output("Out").Run();
  GradientCheck("tanh").Input("X", RandomTensor({2, 3, 2}, 3, -2, 2)).Output("Out").Run();
}

TEST(TanhOpTest, MismatchedGradientShapeThrows) {
  EXPECT_THROW(RunOp({"tanh_grad",
                      {{"Out", {MakeTensor<double>({2, 2}, {})}},
                       {"Out@GRAD", {MakeTensor<double>({2, 3}, {})}}},
                      {{"X@GRAD", 1}},
                      {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
