// Tests of transpose (its gradient is a transpose with the inverse permutation).
#include <gtest/gtest.h>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

Tensor Transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  return RunOp({"transpose", {{"X", {x}}}, {{"Out", 1}}, [&](proto::OpDesc* op) {
                  SetAttr(op, "axis", perm);
                }})["Out"][0];
}

// Reference: Out[i] = X[j] where Out's multi-index permuted back is X's.
std::vector<double> ReferenceTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  const Shape& in = x.shape();
  const size_t rank = in.size();
  Shape out_shape(rank);
  for (size_t i = 0; i < rank; ++i) out_shape[i] = in[static_cast<size_t>(perm[i])];
  const auto xv = ToDoubles(x);
  std::vector<double> out(xv.size());
  std::vector<int64_t> index(rank, 0);  // Out's multi-index
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t rem = static_cast<int64_t>(flat);
    for (size_t d = rank; d-- > 0;) {
      index[d] = rem % out_shape[d];
      rem /= out_shape[d];
    }
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) {
      // X's dim perm[i] is indexed by Out's index i.
      int64_t xi = 0;
      for (size_t i = 0; i < rank; ++i) {
        if (static_cast<size_t>(perm[i]) == d) xi = index[i];
      }
      src = src * in[d] + xi;
    }
    out[flat] = xv[static_cast<size_t>(src)];
  }
  return out;
}

TEST(TransposeOpTest, TransposesAMatrix) {
  const Tensor out = Transpose(MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}), {1, 0});
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(out.dtype(), DataType::kFloat32);
  EXPECT_EQ(ToDoubles(out), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(TransposeOpTest, GeneralPermutationsMatchReference) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {0, 1, 2}},
      {{2, 3, 4, 5}, {0, 2, 3, 1}},
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{3, 1, 2, 1, 2}, {4, 2, 0, 3, 1}},
      {{7}, {0}}};
  uint64_t seed = 1;
  for (const auto& [shape, perm] : cases) {
    const Tensor x = RandomTensor(shape, seed++);
    const Tensor out = Transpose(x, perm);
    for (size_t i = 0; i < perm.size(); ++i)
      EXPECT_EQ(out.dim(static_cast<int>(i)), shape[perm[i]]);
    EXPECT_EQ(ToDoubles(out), ReferenceTranspose(x, perm))
        << ShapeToString(shape) << " by " << ShapeToString(perm);
  }
}

TEST(TransposeOpTest, IntegerTypes) {
  const Tensor out = Transpose(MakeTensor<int64_t>({3, 1, 2}, {1, 2, 3, 4, 5, 6}), {2, 1, 0});
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  EXPECT_EQ(ToDoubles(out), (std::vector<double>{1, 3, 5, 2, 4, 6}));
}

TEST(TransposeOpTest, InfersUnknownBatch) {
  Program main, startup;
  Builder b(&main, &startup);
  EXPECT_EQ(b.Transpose(b.Data("x", {-1, 3, 28, 28}), {0, 2, 3, 1}).shape, (Shape{-1, 28, 28, 3}));
}

TEST(TransposeOpTest, GradientIsTheInverseTranspose) {
  proto::OpDesc fwd;
  fwd.set_type("transpose");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  SetAttr(&fwd, "axis", std::vector<int64_t>{2, 0, 1});
  auto grads = GetOpSchema("transpose").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "transpose");
  EXPECT_EQ(InputVars(grads[0], "X"), (std::vector<std::string>{"y@GRAD"}));
  EXPECT_EQ(OutputVars(grads[0], "Out"), (std::vector<std::string>{"x@GRAD"}));
  EXPECT_EQ(AttrValue<std::vector<int64_t>>(*FindAttr(grads[0], "axis")),
            (std::vector<int64_t>{1, 2, 0}));
}

TEST(TransposeOpTest, GradientMatchesNumeric) {
  auto check = [](const Shape& shape, const std::vector<int64_t>& perm, uint64_t seed) {
    GradientCheck("transpose")
        .Input("X", RandomTensor(shape, seed))
        .Output("Out")
        .Attrs([perm](proto::OpDesc* op) { SetAttr(op, "axis", perm); })
        .Run();
  };
  check({2, 3}, {1, 0}, 1);
  check({2, 3, 4}, {2, 0, 1}, 2);
  check({2, 1, 3, 2}, {0, 2, 3, 1}, 3);
}

TEST(TransposeOpTest, RejectsAxisThatIsNotAPermutation) {
  const Tensor x = RandomTensor({2, 3}, 1);
  EXPECT_THROW(Transpose(x, {0, 0}), Error);                                  // repeated
  EXPECT_THROW(Transpose(x, {0, 2}), Error);                                  // out of range
  EXPECT_THROW(Transpose(x, {1, 0, 2}), Error);                               // wrong length
  EXPECT_THROW(Transpose(x, {-1, 0}), Error);                                 // negative
  EXPECT_THROW(RunOp({"transpose", {{"X", {x}}}, {{"Out", 1}}, {}}), Error);  // no axis
}

}  // namespace
}  // namespace rill::testing
