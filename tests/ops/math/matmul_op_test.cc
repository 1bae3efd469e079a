// Tests of matmul (with transposes, alpha and batches) and matmul_grad.
#include <gtest/gtest.h>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

// Element (i, j) of a row-major matrix stored at `base`, read transposed when asked.
double At(const Tensor& t, int64_t base, int64_t cols, bool transposed, int64_t i, int64_t j) {
  return transposed ? t.GetAsDouble(base + j * cols + i) : t.GetAsDouble(base + i * cols + j);
}

// The row-major offset in `t` of batch index `out_index` of Out (whose batch
// dims are `out_batch`), by numpy's rule: t's batch dims align from the right
// and a dim of 1 always reads index 0.
int64_t BatchOffset(const Tensor& t, const Shape& out_batch, const std::vector<int64_t>& index) {
  const int64_t rank = t.rank() - 2;
  const int64_t pad = static_cast<int64_t>(out_batch.size()) - rank;
  int64_t matrix = 0;
  for (int64_t j = 0; j < rank; ++j) {
    const int64_t dim = t.dim(j);
    matrix = matrix * dim + (dim == 1 ? 0 : index[j + pad]);
  }
  return matrix * t.dim(rank) * t.dim(rank + 1);
}

// alpha * op(X) op(Y) from the definition, product by product, Out's batch
// dims given.
std::vector<double> Reference(const Tensor& x, const Tensor& y, bool tx, bool ty, double alpha,
                              const Shape& out_batch) {
  const int64_t xr = x.dim(x.rank() - 2), xc = x.dim(x.rank() - 1);
  const int64_t yr = y.dim(y.rank() - 2), yc = y.dim(y.rank() - 1);
  const int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  int64_t count = 1;
  for (int64_t d : out_batch) count *= d;
  std::vector<double> out;
  for (int64_t s = 0; s < count; ++s) {
    std::vector<int64_t> index(out_batch.size());
    for (int64_t j = static_cast<int64_t>(out_batch.size()) - 1, rest = s; j >= 0; --j) {
      index[j] = rest % out_batch[j];
      rest /= out_batch[j];
    }
    const int64_t xb = BatchOffset(x, out_batch, index);
    const int64_t yb = BatchOffset(y, out_batch, index);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += At(x, xb, xc, tx, i, p) * At(y, yb, yc, ty, p, j);
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
  Shape out_batch;  // Out's batch dims, worked out by hand
};

std::vector<MatmulCase> Cases() {
  return {{{3, 4}, {4, 5}, false, false, {}},
          {{4, 3}, {4, 5}, true, false, {}},
          {{3, 4}, {5, 4}, false, true, {}},
          {{4, 3}, {5, 4}, true, true, {}},
          {{2, 3, 4}, {2, 4, 5}, false, false, {2}},
          {{2, 4, 3}, {2, 5, 4}, true, true, {2}},
          {{2, 3, 4}, {4, 5}, false, false, {2}},
          {{2, 3, 4}, {5, 4}, false, true, {2}},
          // Attention's shapes: scores [B, H, T, D] x [B, H, D, T]^T, context.
          {{2, 3, 4, 5}, {2, 3, 4, 5}, false, true, {2, 3}},
          {{2, 3, 4, 4}, {2, 3, 4, 5}, false, false, {2, 3}},
          // One X for every head, one Y for every batch, a shared X.
          {{2, 1, 3, 4}, {2, 3, 4, 5}, false, false, {2, 3}},
          {{2, 3, 4, 3}, {2, 1, 4, 5}, true, false, {2, 3}},
          {{3, 4}, {2, 4, 5}, false, false, {2}},
          {{4, 3}, {2, 5, 4}, true, true, {2}},
          // Both broadcast, ranks differ: [2] and [3, 1] give [3, 2].
          {{2, 3, 4}, {3, 1, 4, 5}, false, false, {3, 2}},
          {{2, 1, 1, 3, 4}, {1, 3, 1, 4, 2}, false, false, {2, 3, 1}}};
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
    auto want = Reference(x, y, c.tx, c.ty, 0.5, c.out_batch);
    Shape want_shape = c.out_batch;
    want_shape.push_back(c.tx ? c.x.back() : c.x[c.x.size() - 2]);
    want_shape.push_back(c.ty ? c.y[c.y.size() - 2] : c.y.back());
    EXPECT_EQ(ShapeToString(out["Out"][0].shape()), ShapeToString(want_shape));
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

TEST(MatmulOpTest, BatchDimsThatDoNotBroadcastThrowNamingBothShapes) {
  try {
    RunOp({"matmul",
           {{"X", {RandomTensor({2, 3, 4, 5}, 1)}}, {"Y", {RandomTensor({2, 2, 5, 4}, 2)}}},
           {{"Out", 1}},
           {}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("do not broadcast"), std::string::npos) << what;
    EXPECT_NE(what.find("[2, 3, 4, 5]"), std::string::npos) << what;
    EXPECT_NE(what.find("[2, 2, 5, 4]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace rill::testing
