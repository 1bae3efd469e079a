// Tests of accuracy.
#include <gtest/gtest.h>

#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(AccuracyOpTest, CountsRowsWhoseLabelIsInTopK) {
  // Hits: row 0 (2 in {1, 2}) and row 3 (1 in {3, 1}).
  auto out = RunOp({"accuracy",
                    {{"Out", {MakeTensor<float>({4, 2}, {})}},
                     {"Indices", {MakeTensor<int64_t>({4, 2}, {1, 2, 0, 3, 2, 2, 3, 1})}},
                     {"Label", {MakeTensor<int64_t>({4, 1}, {2, 1, 0, 1})}}},
                    {{"Accuracy", 1}, {"Correct", 1}, {"Total", 1}},
                    {}});
  ASSERT_EQ(out["Accuracy"][0].dtype(), DataType::kFloat32);
  ASSERT_EQ(out["Accuracy"][0].shape(), (Shape{1}));
  EXPECT_EQ(ToDoubles(out["Accuracy"][0]), (std::vector<double>{0.5}));
  ASSERT_EQ(out["Correct"][0].dtype(), DataType::kInt64);
  EXPECT_EQ(out["Correct"][0].data<int64_t>()[0], 2);
  EXPECT_EQ(out["Total"][0].data<int64_t>()[0], 4);
}

TEST(AccuracyOpTest, TopOneMatchesReference) {
  const std::vector<int64_t> indices = {0, 1, 2, 1, 1, 0, 2};
  const std::vector<int64_t> labels = {0, 1, 1, 1, 2, 0, 2};
  int64_t hits = 0;
  for (size_t i = 0; i < labels.size(); ++i) hits += indices[i] == labels[i];
  auto out = RunOp({"accuracy",
                    {{"Out", {MakeTensor<double>({7, 1}, {})}},
                     {"Indices", {MakeTensor<int64_t>({7, 1}, indices)}},
                     {"Label", {MakeTensor<int64_t>({7, 1}, labels)}}},
                    {{"Accuracy", 1}, {"Correct", 1}, {"Total", 1}},
                    {}});
  EXPECT_FLOAT_EQ(static_cast<float>(ToDoubles(out["Accuracy"][0])[0]),
                  static_cast<float>(hits) / 7.0f);
  EXPECT_EQ(out["Correct"][0].data<int64_t>()[0], hits);
}

TEST(AccuracyOpTest, CorrectAndTotalAreOptional) {
  auto out = RunOp({"accuracy",
                    {{"Out", {MakeTensor<float>({2, 1}, {})}},
                     {"Indices", {MakeTensor<int64_t>({2, 1}, {3, 3})}},
                     {"Label", {MakeTensor<int64_t>({2, 1}, {3, 3})}}},
                    {{"Accuracy", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["Accuracy"][0]), (std::vector<double>{1.0}));
}

TEST(AccuracyOpTest, IsNotDifferentiable) { EXPECT_FALSE(GetOpSchema("accuracy").has_grad()); }

TEST(AccuracyOpTest, BadShapesThrow) {
  // Label rows differ from Indices rows.
  EXPECT_THROW(RunOp({"accuracy",
                      {{"Out", {MakeTensor<float>({4, 2}, {})}},
                       {"Indices", {MakeTensor<int64_t>({4, 2}, {})}},
                       {"Label", {MakeTensor<int64_t>({3, 1}, {})}}},
                      {{"Accuracy", 1}},
                      {}}),
               Error);
  // Out and Indices differ.
  EXPECT_THROW(RunOp({"accuracy",
                      {{"Out", {MakeTensor<float>({4, 1}, {})}},
                       {"Indices", {MakeTensor<int64_t>({4, 2}, {})}},
                       {"Label", {MakeTensor<int64_t>({4, 1}, {})}}},
                      {{"Accuracy", 1}},
                      {}}),
               Error);
  // Indices must be int64.
  EXPECT_THROW(RunOp({"accuracy",
                      {{"Out", {MakeTensor<float>({4, 1}, {})}},
                       {"Indices", {MakeTensor<float>({4, 1}, {})}},
                       {"Label", {MakeTensor<int64_t>({4, 1}, {})}}},
                      {{"Accuracy", 1}},
                      {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
