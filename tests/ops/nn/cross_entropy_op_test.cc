// Tests of cross_entropy and cross_entropy_grad.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

// The message of the rill::Error that f throws, or "" when it throws none.
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void SoftLabel(proto::OpDesc* op) { SetAttr(op, "soft_label", true); }

// Rows of probabilities: random values in [0.1, 1) normalised per row.
Tensor Probabilities(const Shape& shape, uint64_t seed) {
  Tensor t = RandomTensor(shape, seed, 0.1, 1.0);
  double* p = t.mutable_data<double>();
  const int64_t cols = shape.back();
  for (int64_t r = 0; r < t.numel() / cols; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += p[r * cols + j];
    for (int64_t j = 0; j < cols; ++j) p[r * cols + j] /= sum;
  }
  return t;
}

TEST(CrossEntropyOpTest, HardLabelIsMinusLogOfLabelledProbability) {
  auto out = RunOp({"cross_entropy",
                    {{"X", {MakeTensor<float>({2, 3}, {0.2f, 0.5f, 0.3f, 0.1f, 0.1f, 0.8f})}},
                     {"Label", {MakeTensor<int64_t>({2, 1}, {1, 2})}}},
                    {{"Y", 1}},
                    {}});
  ASSERT_EQ(out["Y"][0].shape(), (Shape{2, 1}));
  ASSERT_EQ(out["Y"][0].dtype(), DataType::kFloat32);
  auto y = ToDoubles(out["Y"][0]);
  EXPECT_NEAR(y[0], 0.6931471805599453, 1e-6);
  EXPECT_NEAR(y[1], 0.2231435513142097, 1e-6);
}

TEST(CrossEntropyOpTest, SoftLabelIsMinusSumOfLabelTimesLog) {
  const std::vector<double> x = {0.2, 0.5, 0.3, 0.1, 0.1, 0.8};
  const std::vector<double> label = {0.0, 0.25, 0.75, 0.5, 0.5, 0.0};
  auto out = RunOp(
      {"cross_entropy",
       {{"X", {MakeTensor<double>({2, 3}, x)}}, {"Label", {MakeTensor<double>({2, 3}, label)}}},
       {{"Y", 1}},
       SoftLabel});
  auto y = ToDoubles(out["Y"][0]);
  for (int r = 0; r < 2; ++r) {
    double want = 0;
    for (int j = 0; j < 3; ++j) want -= label[r * 3 + j] * std::log(x[r * 3 + j]);
    EXPECT_NEAR(y[r], want, 1e-14) << r;
  }
}

TEST(CrossEntropyOpTest, ZeroProbabilityIsClampedNotInfinite) {
  auto out = RunOp(
      {"cross_entropy",
       {{"X", {MakeTensor<double>({1, 2}, {1, 0})}}, {"Label", {MakeTensor<int64_t>({1, 1}, {1})}}},
       {{"Y", 1}},
       {}});
  EXPECT_NEAR(ToDoubles(out["Y"][0])[0], 46.051701859880914, 1e-9);
}

TEST(CrossEntropyOpTest, Rank3UsesLastAxis) {
  Tensor x = Probabilities({2, 2, 3}, 4);
  auto out = RunOp({"cross_entropy",
                    {{"X", {x}}, {"Label", {MakeTensor<int64_t>({2, 2, 1}, {0, 2, 1, 1})}}},
                    {{"Y", 1}},
                    {}});
  ASSERT_EQ(out["Y"][0].shape(), (Shape{2, 2, 1}));
  auto y = ToDoubles(out["Y"][0]);
  auto p = ToDoubles(x);
  const int labels[] = {0, 2, 1, 1};
  for (int r = 0; r < 4; ++r) EXPECT_NEAR(y[r], -std::log(p[r * 3 + labels[r]]), 1e-14) << r;
}

TEST(CrossEntropyOpTest, GradKernelHardLabel) {
  auto out = RunOp({"cross_entropy_grad",
                    {{"X", {MakeTensor<double>({2, 2}, {0.25, 0.75, 0.5, 0.5})}},
                     {"Label", {MakeTensor<int64_t>({2, 1}, {0, 1})}},
                     {"Y@GRAD", {MakeTensor<double>({2, 1}, {2, 3})}}},
                    {{"X@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{-8, 0, 0, -6}));
}

TEST(CrossEntropyOpTest, GradientMatchesNumericHardLabel) {
  GradientCheck("cross_entropy")
      .Input("X", Probabilities({4, 3}, 1))
      .Input("Label", MakeTensor<int64_t>({4, 1}, {0, 2, 1, 2}))
      .Output("Y")
      .Run();
  GradientCheck("cross_entropy")
      .Input("X", Probabilities({2, 5}, 2))
      .Input("Label", MakeTensor<int64_t>({2, 1}, {4, 0}))
      .Output("Y")
      .Run();
  GradientCheck("cross_entropy")
      .Input("X", Probabilities({2, 3, 4}, 3))
      .Input("Label", MakeTensor<int64_t>({2, 3, 1}, {0, 1, 2, 3, 3, 1}))
      .Output("Y")
      .Run();
}

TEST(CrossEntropyOpTest, GradientMatchesNumericSoftLabel) {
  GradientCheck("cross_entropy")
      .Input("X", Probabilities({3, 4}, 4))
      .Input("Label", Probabilities({3, 4}, 5))
      .Output("Y")
      .Attrs(SoftLabel)
      .Run();
  GradientCheck("cross_entropy")
      .Input("X", Probabilities({2, 2, 3}, 6))
      .Input("Label", RandomTensor({2, 2, 3}, 7, 0, 1))
      .Output("Y")
      .Attrs(SoftLabel)
      .Run();
}

TEST(CrossEntropyOpTest, LabelOutOfRangeNamesRowAndValue) {
  const std::string msg = ErrorOf([] {
    RunOp({"cross_entropy",
           {{"X", {MakeTensor<float>({2, 3}, {0.2f, 0.5f, 0.3f, 0.1f, 0.1f, 0.8f})}},
            {"Label", {MakeTensor<int64_t>({2, 1}, {1, 3})}}},
           {{"Y", 1}},
           {}});
  });
  EXPECT_NE(msg.find("row 1 is 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 3)"), std::string::npos) << msg;
  EXPECT_FALSE(ErrorOf([] {
                 RunOp({"cross_entropy",
                        {{"X", {MakeTensor<float>({1, 3}, {0.2f, 0.5f, 0.3f})}},
                         {"Label", {MakeTensor<int64_t>({1, 1}, {-1})}}},
                        {{"Y", 1}},
                        {}});
               }).empty());
}

TEST(CrossEntropyOpTest, BadShapesThrow) {
  // Label rows differ from X rows.
  EXPECT_THROW(RunOp({"cross_entropy",
                      {{"X", {MakeTensor<float>({2, 3}, {})}},
                       {"Label", {MakeTensor<int64_t>({3, 1}, {0, 0, 0})}}},
                      {{"Y", 1}},
                      {}}),
               Error);
  // Hard labels need a last dim of 1.
  EXPECT_THROW(RunOp({"cross_entropy",
                      {{"X", {MakeTensor<float>({2, 3}, {})}},
                       {"Label", {MakeTensor<int64_t>({2, 2}, {0, 0, 0, 0})}}},
                      {{"Y", 1}},
                      {}}),
               Error);
  // Hard labels must be int64.
  EXPECT_THROW(RunOp({"cross_entropy",
                      {{"X", {MakeTensor<float>({2, 3}, {})}},
                       {"Label", {MakeTensor<float>({2, 1}, {0, 0})}}},
                      {{"Y", 1}},
                      {}}),
               Error);
  // Soft labels must match X.
  EXPECT_THROW(
      RunOp({"cross_entropy",
             {{"X", {MakeTensor<double>({2, 3}, {})}}, {"Label", {MakeTensor<double>({2, 4}, {})}}},
             {{"Y", 1}},
             SoftLabel}),
      Error);
}

}  // namespace
}  // namespace rill::testing
