// Tests of reshape and reshape_grad.
#include <gtest/gtest.h>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

Tensor Reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  return RunOp({"reshape", {{"X", {x}}}, {{"Out", 1}}, [&](proto::OpDesc* op) {
                  SetAttr(op, "shape", shape);
                }})["Out"][0];
}

// The shape the builder infers for reshaping a declared X.
Shape Inferred(const Shape& x_shape, const Shape& shape) {
  Program main, startup;
  Builder b(&main, &startup);
  return b.Reshape(b.Data("x", x_shape), shape).shape;
}

TEST(ReshapeOpTest, KeepsElementsInOrder) {
  const Tensor x = RandomTensor({2, 3, 4}, 1);
  const Tensor out = Reshape(x, {4, -1});
  EXPECT_EQ(out.shape(), (Shape{4, 6}));
  EXPECT_EQ(out.dtype(), DataType::kFloat64);
  EXPECT_EQ(ToDoubles(out), ToDoubles(x));
}

TEST(ReshapeOpTest, ZeroCopiesTheDimOfX) {
  const Tensor x = MakeTensor<int64_t>({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const Tensor out = Reshape(x, {0, -1});
  EXPECT_EQ(out.shape(), (Shape{2, 6}));
  EXPECT_EQ(ToDoubles(out), ToDoubles(x));
  EXPECT_EQ(Reshape(x, {0, 0, 2}).shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(Reshape(x, {12}).shape(), (Shape{12}));
  EXPECT_EQ(Reshape(x, {1, 0, 4, 1}).shape(), (Shape{1, 3, 4, 1}));
}

TEST(ReshapeOpTest, InfersShapesWithUnknownBatch) {
  EXPECT_EQ(Inferred({-1, 1, 28, 28}, {-1, 784}), (Shape{-1, 784}));
  EXPECT_EQ(Inferred({-1, 1, 28, 28}, {0, 784}), (Shape{-1, 784}));
  EXPECT_EQ(Inferred({-1, 1, 28, 28}, {0, -1}), (Shape{-1, 784}));  // unknown dims cancel
  EXPECT_EQ(Inferred({-1, 1, 28, 28}, {-1, 28, 28}), (Shape{-1, 28, 28}));
  EXPECT_EQ(Inferred({-1, 6}, {3, -1}), (Shape{3, -1}));
  EXPECT_EQ(Inferred({4, 6}, {3, -1}), (Shape{3, 8}));
}

TEST(ReshapeOpTest, RunsWithAFedBatchAndSharesMemory) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 1, 2, 3});
  Var y = b.Reshape(x, {-1, 6});
  Scope scope;
  Executor exe;
  const Tensor fed = RandomTensor({5, 1, 2, 3}, 3, -1, 1, DataType::kFloat32);
  auto out = exe.Run(main.desc(), &scope, {{"x", fed}}, {y.name});
  EXPECT_EQ(out[0].shape(), (Shape{5, 6}));
  EXPECT_EQ(ToDoubles(out[0]), ToDoubles(fed));
  EXPECT_EQ(scope.GetTensor(y.name).raw_data(), scope.GetTensor("x").raw_data());
}

TEST(ReshapeOpTest, GradientMatchesNumeric) {
  auto check = [](const Shape& x, const std::vector<int64_t>& shape, uint64_t seed) {
    GradientCheck("reshape")
        .Input("X", RandomTensor(x, seed))
        .Output("Out")
        .Attrs([shape](proto::OpDesc* op) { SetAttr(op, "shape", shape); })
        .Run();
  };
  check({2, 3, 4}, {4, -1}, 1);
  check({6}, {2, 3}, 2);
  check({3, 4}, {0, 2, 2}, 3);
}

TEST(ReshapeOpTest, MissingOutputGradientIsZero) {
  auto out = RunOp({"reshape_grad", {{"X", {RandomTensor({2, 3}, 1)}}}, {{"X@GRAD", 1}}, {}});
  EXPECT_EQ(out["X@GRAD"][0].shape(), (Shape{2, 3}));
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), std::vector<double>(6, 0));
}

TEST(ReshapeOpTest, RejectsIncompatibleShapes) {
  const Tensor x = RandomTensor({2, 3}, 1);
  EXPECT_THROW(Reshape(x, {4, 2}), Error);         // 6 elements vs 8
  EXPECT_THROW(Reshape(x, {4, -1}), Error);        // 6 does not divide by 4
  EXPECT_THROW(Reshape(x, {-1, -1}), Error);       // two inferred dims
  EXPECT_THROW(Reshape(x, {0, 0, 0}), Error);      // nothing to copy at index 2
  EXPECT_THROW(Reshape(x, {-2, 3}), Error);        // negative dim
  EXPECT_THROW(Inferred({-1, 6}, {0, 7}), Error);  // the known dims cannot match
}

TEST(ReshapeOpTest, RejectsABatchThatDoesNotFitAtRunTime) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 6});
  Var y = b.Reshape(x, {4, -1});  // fine for some batches
  Scope scope;
  Executor exe;
  EXPECT_NO_THROW(
      exe.Run(main.desc(), &scope, {{"x", Tensor(DataType::kFloat32, {2, 6})}}, {y.name}));
  EXPECT_THROW(exe.Run(main.desc(), &scope, {{"x", Tensor(DataType::kFloat32, {3, 6})}}, {y.name}),
               Error);
}

}  // namespace
}  // namespace rill::testing
