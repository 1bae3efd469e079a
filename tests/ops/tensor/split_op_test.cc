// Tests of split and split_grad.
#include <gtest/gtest.h>

#include <algorithm>

#include "rill/backward.h"
#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

std::vector<Tensor> Split(const Tensor& x, int outputs, const AttrSetter& attrs) {
  return RunOp({"split", {{"X", {x}}}, {{"Out", outputs}}, attrs})["Out"];
}

TEST(SplitOpTest, EqualPartsAlongRows) {
  const auto parts = Split(MakeTensor<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), 2,
                           [](proto::OpDesc* op) { SetAttr(op, "num", 2); });
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(ToDoubles(parts[0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(ToDoubles(parts[1]), (std::vector<double>{5, 6, 7, 8}));
}

TEST(SplitOpTest, SectionsAlongColumns) {
  const Tensor x = MakeTensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto parts = Split(x, 2, [](proto::OpDesc* op) {
    SetAttr(op, "axis", 1);
    SetAttr(op, "sections", std::vector<int64_t>{1, -1});
  });
  EXPECT_EQ(parts[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(parts[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(parts[1].dtype(), DataType::kInt64);
  EXPECT_EQ(ToDoubles(parts[0]), (std::vector<double>{1, 4}));
  EXPECT_EQ(ToDoubles(parts[1]), (std::vector<double>{2, 3, 5, 6}));
  // num 0 and no sections: one equal part per output.
  parts = Split(x, 3, [](proto::OpDesc* op) { SetAttr(op, "axis", -1); });
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(ToDoubles(parts[2]), (std::vector<double>{3, 6}));
}

TEST(SplitOpTest, MiddleAxisMatchesReference) {
  const Tensor x = RandomTensor({2, 5, 3}, 1);
  const auto parts = Split(x, 3, [](proto::OpDesc* op) {
    SetAttr(op, "axis", 1);
    SetAttr(op, "sections", std::vector<int64_t>{2, 0, 3});
  });
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].shape(), (Shape{2, 0, 3}));
  const auto xv = ToDoubles(x), p0 = ToDoubles(parts[0]), p2 = ToDoubles(parts[2]);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 5; ++j) {
      for (int k = 0; k < 3; ++k) {
        const double got = j < 2 ? p0[(i * 2 + j) * 3 + k] : p2[(i * 3 + j - 2) * 3 + k];
        EXPECT_EQ(got, xv[(i * 5 + j) * 3 + k]) << i << " " << j << " " << k;
      }
    }
  }
}

TEST(SplitOpTest, InfersUnknownBatch) {
  Program main, startup;
  Builder b(&main, &startup);
  auto parts = b.Split(b.Data("x", {-1, 6}), 3, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].shape, (Shape{-1, 2}));
  parts = b.Split(b.Data("y", {-1, 6}), 2, 0);
  EXPECT_EQ(parts[0].shape, (Shape{-1, 6}));
}

TEST(SplitOpTest, GradientMatchesNumeric) {
  GradientCheck("split")
      .Input("X", RandomTensor({4, 3}, 1))
      .Output("Out", 2)
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "num", 2); })
      .Run();
  GradientCheck("split")
      .Input("X", RandomTensor({2, 6, 2}, 2))
      .Output("Out", 3)
      .Attrs([](proto::OpDesc* op) {
        SetAttr(op, "axis", 1);
        SetAttr(op, "sections", std::vector<int64_t>{1, 2, -1});
      })
      .Run();
  GradientCheck("split")
      .Input("X", RandomTensor({3, 4}, 3))
      .Output("Out", 4)
      .Attrs([](proto::OpDesc* op) { SetAttr(op, "axis", -1); })
      .Run();
}

// Only the second part reaches the loss: split_grad gets that part's
// gradient alone and must treat the first as zeros.
TEST(SplitOpTest, GradientWithAnUnusedPart) {
  Program main, startup;
  Builder b(&main, &startup, 5);
  Var w = b.Parameter("w", {4, 3}, Initializer::Uniform(-1, 1));
  auto parts = b.Split(w, 2, 0);
  Var flat = b.Reshape(parts[1], {1, -1});
  auto top = b.AppendOp("top_k", {{"X", {flat}}}, {{"Out", 1}, {"Indices", 1}});
  AppendBackward(&main, top[0].name);

  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  auto out = exe.Run(main.desc(), &scope, {}, {"w", "w@GRAD"});
  const auto wv = ToDoubles(out[0]);
  const auto argmax = std::max_element(wv.begin() + 6, wv.end()) - wv.begin();
  std::vector<double> want(12, 0);
  want[static_cast<size_t>(argmax)] = 1;
  EXPECT_EQ(ToDoubles(out[1]), want);
}

TEST(SplitOpTest, RejectsPartsThatDoNotFit) {
  const Tensor x = RandomTensor({5, 2}, 1);
  auto num = [](int n) { return [n](proto::OpDesc* op) { SetAttr(op, "num", n); }; };
  auto sections = [](std::vector<int64_t> s) {
    return [s](proto::OpDesc* op) { SetAttr(op, "sections", s); };
  };
  EXPECT_THROW(Split(x, 2, num(2)), Error);              // 5 does not divide by 2
  EXPECT_THROW(Split(x, 3, num(5)), Error);              // num differs from the outputs
  EXPECT_THROW(Split(x, 2, sections({2, 2})), Error);    // sums to 4, not 5
  EXPECT_THROW(Split(x, 2, sections({-1, -1})), Error);  // two inferred parts
  EXPECT_THROW(Split(x, 2, sections({6, -1})), Error);   // more than the axis holds
  EXPECT_THROW(Split(x, 3, sections({2, 3})), Error);    // two sections, three outputs
  EXPECT_THROW(Split(x, 2, [](proto::OpDesc* op) { SetAttr(op, "axis", 2); }), Error);
}

}  // namespace
}  // namespace rill::testing
