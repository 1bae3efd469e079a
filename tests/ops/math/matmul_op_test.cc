// Tests of matmul (with transposes, alpha and batches) and matmul_grad.
#include <gtest/gtest.h>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

// Element (i, j) of a row-major matrix stored at `base`, read transposed when asked.
double At(const Tensor& t, int64_t base, int64_t cols, bool transposed, int64_t i, int64_t j) {
  return transposed ? t.GetAsDouble(base + j * cols + i) : t.GetAsDouble(base + i * cols + j);
}

// alpha * op(X) op(Y) from the definition, batch by batch.
std::vector<double> Reference(const Tensor& x, const Tensor& y, bool tx, bool ty, double alpha) {
  const bool batched = x.rank() == 3;
  const int64_t b = batched ? x.dim(0) : 1;
  const int64_t xr = x.dim(x.rank() - 2), xc = x.dim(x.rank() - 1);
  const int64_t yr = y.dim(y.rank() - 2), yc = y.dim(y.rank() - 1);
  const int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  const bool y_batched = y.rank() == 3;
  std::vector<double> out;
  for (int64_t s = 0; s < b; ++s) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += At(x, s * xr * xc, xc, tx, i, p) *
                 At(y, y_batched ? s * yr * yc : 0, yc, ty, p, j);
        }
        out.push_back(alpha * acc);
      }
    }
  }
  return out;
}

struct MatmulCase {
  Shape x;
  Shape y;
  bool tx;
  bool ty;
};

std::vector<MatmulCase> Cases() {
  return {{{3, 4}, {4, 5}, false, false},    {{4, 3}, {4, 5}, true, false},
          {{3, 4}, {5, 4}, false, true},     {{4, 3}, {5, 4}, true, true},
          {{2, 3, 4}, {2, 4, 5}, false, false}, {{2, 4, 3}, {2, 5, 4}, true, true},
          {{2, 3, 4}, {4, 5}, false, false},  {{2, 3, 4}, {5, 4}, false, true}};
}

TEST(MatmulOpTest, MatchesReferenceForEveryTransposeAndBatch) {
  uint64_t seed = 1;
  for (const MatmulCase& c : Cases()) {
    SCOPED_TRACE(ShapeToString(c.x) + " x " + ShapeToString(c.y));
    Tensor x = RandomTensor(c.x, seed++);
    Tensor y = RandomTensor(c.y, seed++);
    auto out = RunOp({"matmul", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}}, [&](proto::OpDesc* op) {
                        SetAttr(op, "transpose_X", c.tx);
                        SetAttr(op, "transpose_Y", c.ty);
                        SetAttr(op, "alpha", 0.5f);
                      }});
    auto want = Reference(x, y, c.tx, c.ty, 0.5);
    auto got = ToDoubles(out["Out"][0]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
  }
}

TEST(MatmulOpTest, GradientMatchesNumericForEveryTransposeAndBatch) {
  uint64_t seed = 50;
  for (const MatmulCase& c : Cases()) {
    SCOPED_TRACE(ShapeToString(c.x) + " x " + ShapeToString(c.y));
    seed += 2;
    GradientCheck("matmul")
        .Input("X", RandomTensor(c.x, seed))
        .Input("Y", RandomTensor(c.y, seed + 1))
        .Output("Out")
        .Attrs([&](proto::OpDesc* op) {
          SetAttr(op, "transpose_X", c.tx);
          SetAttr(op, "transpose_Y", c.ty);
          SetAttr(op, "alpha", 1.5f);
        })
        .Run();
  }
}

TEST(MatmulOpTest, InnerDimMismatchThrows) {
  EXPECT_THROW(RunOp({"matmul",
                      {{"X", {RandomTensor({2, 3}, 1)}}, {"Y", {RandomTensor({2, 3}, 2)}}},
                      {{"Out", 1}},
                      {}}),
               Error);
}

TEST(MatmulOpTest, RankOneAndBatchMismatchThrow) {
  EXPECT_THROW(RunOp({"matmul",
                      {{"X", {RandomTensor({3}, 1)}}, {"Y", {RandomTensor({3, 2}, 2)}}},
                      {{"Out", 1}},
                      {}}),
               Error);
  EXPECT_THROW(RunOp({"matmul",
                      {{"X", {RandomTensor({2, 3, 4}, 1)}}, {"Y", {RandomTensor({3, 4, 5}, 2)}}},
                      {{"Out", 1}},
                      {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
