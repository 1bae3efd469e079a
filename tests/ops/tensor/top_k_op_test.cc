// Tests of top_k and top_k_grad.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "rill/error.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

std::map<std::string, std::vector<Tensor>> TopK(const Tensor& x, int k) {
  return RunOp({"top_k", {{"X", {x}}}, {{"Out", 1}, {"Indices", 1}}, [k](proto::OpDesc* op) {
                  SetAttr(op, "k", k);
                }});
}

TEST(TopKOpTest, LargestValuesDescending) {
  auto out = TopK(MakeTensor<float>({2, 5}, {1, 9, 3, 7, 5, -1, -5, -2, -4, -3}), 2);
  EXPECT_EQ(out["Out"][0].shape(), (Shape{2, 2}));
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kFloat32);
  EXPECT_EQ(out["Indices"][0].dtype(), DataType::kInt64);
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{9, 7, -1, -2}));
  EXPECT_EQ(ToDoubles(out["Indices"][0]), (std::vector<double>{1, 3, 0, 2}));
}

TEST(TopKOpTest, DefaultKIsOneAndTiesKeepTheEarlierIndex) {
  auto out = RunOp({"top_k",
                    {{"X", {MakeTensor<double>({1, 4}, {3, 1, 3, 2})}}},
                    {{"Out", 1}, {"Indices", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["Indices"][0]), (std::vector<double>{0}));
  out = TopK(MakeTensor<double>({1, 4}, {3, 1, 3, 2}), 3);
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{3, 3, 2}));
  EXPECT_EQ(ToDoubles(out["Indices"][0]), (std::vector<double>{0, 2, 3}));
}

// Reference by stable sort, for the short (insertion) and long (partial sort) paths.
TEST(TopKOpTest, MatchesStableSortReference) {
  for (const auto& [shape, k] : std::vector<std::pair<Shape, int>>{
           {{3, 10}, 10}, {{2, 2, 7}, 3}, {{3, 40}, 20}, {{1, 100}, 17}, {{4, 9}, 1}}) {
    Tensor x = RandomTensor(shape, static_cast<uint64_t>(k), -1, 1, DataType::kFloat32);
    // Coarse values, so ties happen.
    float* p = x.mutable_data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) p[i] = std::round(p[i] * 4) / 4;
    auto out = TopK(x, k);
    const int64_t c = shape.back();
    const auto values = ToDoubles(out["Out"][0]);
    const auto indices = ToDoubles(out["Indices"][0]);
    for (int64_t r = 0; r < x.numel() / c; ++r) {
      std::vector<int64_t> order(static_cast<size_t>(c));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return p[r * c + a] > p[r * c + b]; });
      for (int j = 0; j < k; ++j) {
        EXPECT_EQ(indices[r * k + j], order[j]) << ShapeToString(shape) << " row " << r;
        EXPECT_EQ(values[r * k + j], p[r * c + order[j]]);
      }
    }
  }
}

TEST(TopKOpTest, IntegerInput) {
  auto out = TopK(MakeTensor<int64_t>({1, 3}, {4, 8, 6}), 2);
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kInt64);
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{8, 6}));
}

TEST(TopKOpTest, GradientMatchesNumeric) {
  GradientCheck("top_k")
      .Input("X", RandomTensor({3, 5}, 1))
      .Output("Out")
      .Output("Indices")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "k", 2); })
      .Run();
  GradientCheck("top_k")
      .Input("X", RandomTensor({2, 3, 4}, 2))
      .Output("Out")
      .Output("Indices")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "k", 3); })
      .Run();
  GradientCheck("top_k")
      .Input("X", RandomTensor({2, 30}, 3))
      .Output("Out")
      .Output("Indices")
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "k", 20); })
      .Run();
}

TEST(TopKOpTest, GradientScattersToIndices) {
  auto out = RunOp({"top_k_grad",
                    {{"X", {RandomTensor({2, 4}, 1)}},
                     {"Indices", {MakeTensor<int64_t>({2, 2}, {3, 0, 1, 2})}},
                     {"Out@GRAD", {MakeTensor<double>({2, 2}, {10, 20, 30, 40})}}},
                    {{"X@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{20, 0, 0, 10, 0, 30, 40, 0}));
  EXPECT_FALSE(GetOpSchema("top_k").FindOutput("Indices")->differentiable());
}

TEST(TopKOpTest, RejectsBadK) {
  const Tensor x = RandomTensor({2, 3}, 1);
  EXPECT_THROW(TopK(x, 4), Error);  // larger than the last dim
  EXPECT_THROW(TopK(x, 0), Error);
  EXPECT_THROW(TopK(MakeTensor<double>({}, {1}), 1), Error);  // rank 0
  EXPECT_THROW(RunOp({"top_k_grad",
                      {{"X", {x}},
                       {"Indices", {MakeTensor<int64_t>({2, 1}, {0, 3})}},
                       {"Out@GRAD", {RandomTensor({2, 1}, 2)}}},
                      {{"X@GRAD", 1}},
                      {}}),
               Error);  // index 3 is outside the row
}

}  // namespace
}  // namespace rill::testing
