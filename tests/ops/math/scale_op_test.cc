#include <gtest/gtest.h>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(ScaleOpTest, ComputesScaleTimesXPlusBias) {
  auto out = RunOp({"scale",
                    {{"X", {MakeTensor<float>({3}, {1, 2, 3})}}},
                    {{"Out", 1}},
                    [](proto::OpDesc* op) {
                      SetAttr(op, "scale", 2.0f);
                      SetAttr(op, "bias", 1.0f);
                    }});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{3, 5, 7}));
}

TEST(ScaleOpTest, GradientMatchesNumeric) {
  GradientCheck("scale")
      .Input("X", RandomTensor({2, 3}, 1))
      .Output("Out")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "scale", -0.5f); })
      .Run();
}

}  // namespace
}  // namespace rill::testing
