// Tests of softmax_with_cross_entropy and its gradient op.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace softmax_with_cross_entropy_op_test {

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void SoftLabel(proto::OpDesc* op) { SetAttr(op, "soft_label", true); }

TEST(SoftmaxWithCrossEntropyOpTest, HardLabelKnownValuesFloat32) {
  auto out = RunOp({"softmax_with_cross_entropy",
                    {{"Logits", {MakeTensor<float>({2, 3}, {1, 2, 3, 1, 1, 1})}},
                     {"Label", {MakeTensor<int64_t>({2, 1}, {2, 0})}}},
                    {{"Softmax", 1}, {"Loss", 1}},
                    {}});
  ASSERT_EQ(out["Loss"][0].shape(), (Shape{2, 1}));
  ASSERT_EQ(out["Softmax"][0].shape(), (Shape{2, 3}));
  auto loss = ToDoubles(out["Loss"][0]);
  EXPECT_NEAR(loss[0], 3.40760596444438 - 3, 1e-6);
  EXPECT_NEAR(loss[1], 1.0986122886681098, 1e-6);
  auto sm = ToDoubles(out["Softmax"][0]);
  const std::vector<double> want = {
      0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(sm[i], want[i], 1e-6) << i;
}

TEST(SoftmaxWithCrossEntropyOpTest, ConfidentWrongLogitsGiveFiniteLoss) {
  // softmax(1000, 0)[1] underflows to 0, yet the loss is exactly 1000.
  auto out = RunOp({"softmax_with_cross_entropy",
                    {{"Logits", {MakeTensor<double>({1, 2}, {1000, 0})}},
                     {"Label", {MakeTensor<int64_t>({1, 1}, {1})}}},
                    {{"Softmax", 1}, {"Loss", 1}},
                    {}});
  EXPECT_NEAR(ToDoubles(out["Loss"][0])[0], 1000.0, 1e-9);
  EXPECT_EQ(ToDoubles(out["Softmax"][0]), (std::vector<double>{1, 0}));
}

TEST(SoftmaxWithCrossEntropyOpTest, SoftLabelMatchesReference) {
  Tensor logits = RandomTensor({3, 4}, 11, -3, 3);
  Tensor label = RandomTensor({3, 4}, 12, 0, 1);
  auto out = RunOp({"softmax_with_cross_entropy",
                    {{"Logits", {logits}}, {"Label", {label}}},
                    {{"Softmax", 1}, {"Loss", 1}},
                    SoftLabel});
  auto x = ToDoubles(logits);
  auto l = ToDoubles(label);
  auto loss = ToDoubles(out["Loss"][0]);
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int j = 0; j < 4; ++j) sum += std::exp(x[r * 4 + j]);
    double want = 0;
    for (int j = 0; j < 4; ++j) want -= l[r * 4 + j] * std::log(std::exp(x[r * 4 + j]) / sum);
    EXPECT_NEAR(loss[r], want, 1e-12) << r;
  }
}

TEST(SoftmaxWithCrossEntropyOpTest, GradKernelIsSoftmaxMinusOneHot) {
  auto out = RunOp({"softmax_with_cross_entropy_grad",
                    {{"Softmax", {MakeTensor<double>({2, 3}, {0.2, 0.3, 0.5, 0.1, 0.6, 0.3})}},
                     {"Label", {MakeTensor<int64_t>({2, 1}, {2, 0})}},
                     {"Loss@GRAD", {MakeTensor<double>({2, 1}, {1, 2})}}},
                    {{"Logits@GRAD", 1}},
                    {}});
  auto g = ToDoubles(out["Logits@GRAD"][0]);
  const std::vector<double> want = {0.2, 0.3, -0.5, -1.8, 1.2, 0.6};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-15) << i;
}

TEST(SoftmaxWithCrossEntropyOpTest, GradOpNeedsSoftmaxAndLabelOnly) {
  proto::OpDesc fwd;
  fwd.set_type("softmax_with_cross_entropy");
  SetInput(&fwd, "Logits", {"z"});
  SetInput(&fwd, "Label", {"y"});
  SetOutput(&fwd, "Softmax", {"p"});
  SetOutput(&fwd, "Loss", {"l"});
  auto grads = GetOpSchema("softmax_with_cross_entropy").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(InputVars(grads[0], "Softmax"), (std::vector<std::string>{"p"}));
  EXPECT_EQ(InputVars(grads[0], "Loss@GRAD"), (std::vector<std::string>{"l@GRAD"}));
  EXPECT_TRUE(InputVars(grads[0], "Logits").empty());
  EXPECT_EQ(OutputVars(grads[0], "Logits@GRAD"), (std::vector<std::string>{"z@GRAD"}));
}

TEST(SoftmaxWithCrossEntropyOpTest, GradientMatchesNumericHardLabel) {
  GradientCheck("softmax_with_cross_entropy")
      .Input("Logits", RandomTensor({4, 3}, 1, -2, 2))
      .Input("Label", MakeTensor<int64_t>({4, 1}, {0, 2, 1, 2}))
      .Output("Softmax")
      .Output("Loss")
      .Run();
  GradientCheck("softmax_with_cross_entropy")
      .Input("Logits", RandomTensor({2, 6}, 2, -2, 2))
      .Input("Label", MakeTensor<int64_t>({2, 1}, {5, 0}))
      .Output("Softmax")
      .Output("Loss")
      .Run();
  GradientCheck("softmax_with_cross_entropy")
      .Input("Logits", RandomTensor({2, 2, 3}, 3, -2, 2))
      .Input("Label", MakeTensor<int64_t>({2, 2, 1}, {0, 1, 2, 1}))
      .Output("Softmax")
      .Output("Loss")
      .Run();
}

TEST(SoftmaxWithCrossEntropyOpTest, GradientMatchesNumericSoftLabel) {
  GradientCheck("softmax_with_cross_entropy")
      .Input("Logits", RandomTensor({3, 4}, 4, -2, 2))
      .Input("Label", RandomTensor({3, 4}, 5, 0, 1))
      .Output("Softmax")
      .Output("Loss")
      .Attrs(SoftLabel)
      .Run();
  GradientCheck("softmax_with_cross_entropy")
      .Input("Logits", RandomTensor({1, 5}, 6, -2, 2))
      .Input("Label", MakeTensor<double>({1, 5}, {0.1, 0.2, 0.3, 0.4, 0}))
      .Output("Softmax")
      .Output("Loss")
      .Attrs(SoftLabel)
      .Run();
}

TEST(SoftmaxWithCrossEntropyOpTest, LabelOutOfRangeNamesRowAndValue) {
  const std::string msg = ErrorOf([] {
    RunOp({"softmax_with_cross_entropy",
           {{"Logits", {MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6})}},
            {"Label", {MakeTensor<int64_t>({3, 1}, {0, 1, -2})}}},
           {{"Softmax", 1}, {"Loss", 1}},
           {}});
  });
  EXPECT_NE(msg.find("row 2 is -2"), std::string::npos) << msg;
}

TEST(SoftmaxWithCrossEntropyOpTest, BadShapesThrow) {
  EXPECT_THROW(RunOp({"softmax_with_cross_entropy",
                      {{"Logits", {MakeTensor<float>({2, 3}, {})}},
                       {"Label", {MakeTensor<int64_t>({4, 1}, {0, 0, 0, 0})}}},
                      {{"Softmax", 1}, {"Loss", 1}},
                      {}}),
               Error);
  EXPECT_THROW(RunOp({"softmax_with_cross_entropy",
                      {{"Logits", {MakeTensor<float>({2, 3}, {})}},
                       {"Label", {MakeTensor<int64_t>({2}, {0, 0})}}},
                      {{"Softmax", 1}, {"Loss", 1}},
                      {}}),
               Error);
  EXPECT_THROW(RunOp({"softmax_with_cross_entropy",
                      {{"Logits", {MakeTensor<double>({2, 3}, {})}},
                       {"Label", {MakeTensor<double>({2, 2}, {})}}},
                      {{"Softmax", 1}, {"Loss", 1}},
                      SoftLabel}),
               Error);
}

}  // namespace softmax_with_cross_entropy_op_test
}  // namespace rill::testing
