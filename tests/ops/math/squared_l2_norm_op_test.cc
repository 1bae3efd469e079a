// Tests of squared_l2_norm and its gradient, and of its selected-rows input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(SquaredL2NormOpTest, SumsSquares) {
  auto out = RunOp(
      {"squared_l2_norm", {{"X", {MakeTensor<float>({2, 2}, {1, -2, 3, 0})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(out["Out"][0].shape(), (Shape{1}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{14}));
}

TEST(SquaredL2NormOpTest, GradientMatchesNumeric) {
  GradientCheck("squared_l2_norm").Input("X", RandomTensor({7}, 1)).Output("Out").Run();
  GradientCheck("squared_l2_norm").Input("X", RandomTensor({3, 2, 2}, 2)).Output("Out").Run();
}

proto::OpDesc NormOp() {
  proto::OpDesc op;
  op.set_type("squared_l2_norm");
  SetInput(&op, "X", {"x"});
  SetOutput(&op, "Out", {"out"});
  return op;
}

// Selected rows count as the dense tensor they stand for: a repeated row's
// values add up before squaring, and the sum has the dense sum's bits.
TEST(SquaredL2NormOpTest, SelectedRowsGiveTheNormOfTheirDenseTensor) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    SCOPED_TRACE(DataTypeName(dtype));
    const SelectedRows rows =
        MakeSelectedRows({5, 1, 5, 3, 1, 5}, 8, RandomTensor({6, 3}, 4, -1, 1, dtype));
    Scope sparse;
    *sparse.Var("x")->mutable_selected_rows() = rows;
    RunOpOnScope(NormOp(), &sparse);
    const auto dense = RunOp({"squared_l2_norm", {{"X", {rows.ToDense()}}}, {{"Out", 1}}, {}});
    const Tensor& got = sparse.GetTensor("out");
    const Tensor& want = dense.at("Out")[0];
    ASSERT_EQ(got.dtype(), dtype);
    ASSERT_EQ(got.shape(), (Shape{1}));
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.bytes()), 0)
        << got.GetAsDouble(0) << " vs " << want.GetAsDouble(0);
    // Not the sum of the unmerged values' squares.
    double unmerged = 0;
    for (int64_t k = 0; k < rows.value.numel(); ++k) {
      unmerged += rows.value.GetAsDouble(k) * rows.value.GetAsDouble(k);
    }
    EXPECT_GT(std::abs(got.GetAsDouble(0) - unmerged), 1e-3);
  }
}

TEST(SquaredL2NormOpTest, SelectedRowsWithoutRowsGiveZero) {
  Scope scope;
  *scope.Var("x")->mutable_selected_rows() =
      MakeSelectedRows({}, 4, Tensor(DataType::kFloat64, {0, 3}));
  RunOpOnScope(NormOp(), &scope);
  EXPECT_EQ(ToDoubles(scope.GetTensor("out")), (std::vector<double>{0}));
}

// The gradient op is dense only (nothing differentiates through a sparse
// gradient): it says so instead of reading selected rows as a tensor.
TEST(SquaredL2NormOpTest, GradientOfSelectedRowsIsRefused) {
  Scope scope;
  *scope.Var("x")->mutable_selected_rows() = MakeSelectedRows({1}, 2, RandomTensor({1, 2}, 1));
  scope.Var("dout")->mutable_tensor()->CopyFrom(MakeTensor<double>({1}, {1}));
  proto::OpDesc op;
  op.set_type("squared_l2_norm_grad");
  SetInput(&op, "X", {"x"});
  SetInput(&op, "Out@GRAD", {"dout"});
  SetOutput(&op, "X@GRAD", {"dx"});
  try {
    RunOpOnScope(op, &scope);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented) << e.what();
    EXPECT_NE(std::string(e.what()).find("selected rows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rill::testing
