// sparse_l2_decay: a sparse gradient's rows merged, each plus coeff * Param's
// row — on the touched rows exactly what the dense form (Param times a
// fill_constant of coeff, summed into the gradient) gives; nothing for the rest.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

proto::OpDesc DecayOp(const std::string& grad_out, float coeff) {
  proto::OpDesc op;
  op.set_type("sparse_l2_decay");
  SetInput(&op, "Param", {"param"});
  SetInput(&op, "Grad", {"grad"});
  SetOutput(&op, "GradOut", {grad_out});
  SetAttr(&op, "coeff", coeff);
  return op;
}

// The dense form of the optimizer's L2: grad + param * fill_constant(coeff).
Tensor DenseDecay(const Tensor& param, const Tensor& grad, float coeff) {
  Tensor c = RunOp({"fill_constant",
                    {},
                    {{"Out", 1}},
                    [&](proto::OpDesc* op) {
                      SetAttr(op, "shape", std::vector<int64_t>{1});
                      SetAttr(op, "dtype", std::string(DataTypeName(param.dtype())));
                      SetAttr(op, "value", coeff);
                    }})
                 .at("Out")[0];
  Tensor decay =
      RunOp({"elementwise_mul", {{"X", {param}}, {"Y", {c}}}, {{"Out", 1}}, {}}).at("Out")[0];
  return RunOp({"sum", {{"X", {grad, decay}}}, {{"Out", 1}}, {}}).at("Out")[0];
}

TEST(SparseL2DecayOpTest, TouchedRowsGetTheDenseDecayOnce) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    SCOPED_TRACE(DataTypeName(dtype));
    const Tensor param = RandomTensor({6, 3}, 1, -1, 1, dtype);
    const SelectedRows grad =
        MakeSelectedRows({4, 1, 4, 4}, 6, RandomTensor({4, 3}, 2, -1, 1, dtype));
    Scope scope;
    scope.Var("param")->mutable_tensor()->CopyFrom(param);
    *scope.Var("grad")->mutable_selected_rows() = grad;
    RunOpOnScope(DecayOp("grad", 0.1f), &scope);
    const SelectedRows& got = scope.FindVar("grad")->selected_rows();
    EXPECT_EQ(got.rows, (std::vector<int64_t>{1, 4}));  // merged: each row once
    EXPECT_EQ(got.height, 6);
    const Tensor merged_dense = grad.Merged().ToDense();  // repeats summed as Merged sums them
    const Tensor want = DenseDecay(param, merged_dense, 0.1f);
    const size_t width = 3 * SizeOf(dtype);
    for (size_t i = 0; i < got.rows.size(); ++i) {
      EXPECT_EQ(std::memcmp(static_cast<const char*>(got.value.raw_data()) + i * width,
                            static_cast<const char*>(want.raw_data()) + got.rows[i] * width, width),
                0)
          << "row " << got.rows[i];
    }
  }
}

// The input's buffer is not written: an allreduce gives every place the same
// merged rows.
TEST(SparseL2DecayOpTest, TheInputRowsAreNotWritten) {
  const SelectedRows grad = MakeSelectedRows({0, 0}, 2, MakeTensor<double>({2, 1}, {1, 2}));
  Scope scope;
  scope.Var("param")->mutable_tensor()->CopyFrom(MakeTensor<double>({2, 1}, {10, 20}));
  *scope.Var("grad")->mutable_selected_rows() = grad;  // shares grad.value's buffer
  RunOpOnScope(DecayOp("out", 0.5f), &scope, proto::SELECTED_ROWS);
  EXPECT_EQ(ToDoubles(scope.FindVar("out")->selected_rows().value), (std::vector<double>{8}));
  EXPECT_EQ(ToDoubles(grad.value), (std::vector<double>{1, 2}));
}

TEST(SparseL2DecayOpTest, ADenseGradientOrAnotherHeightIsAnError) {
  {
    Scope scope;
    scope.Var("param")->mutable_tensor()->CopyFrom(RandomTensor({2, 2}, 1));
    scope.Var("grad")->mutable_tensor()->CopyFrom(RandomTensor({2, 2}, 2));
    EXPECT_THROW(RunOpOnScope(DecayOp("grad", 0.1f), &scope), Error);
  }
  {
    Scope scope;
    scope.Var("param")->mutable_tensor()->CopyFrom(RandomTensor({3, 2}, 1));
    *scope.Var("grad")->mutable_selected_rows() = MakeSelectedRows({1}, 3, RandomTensor({1, 2}, 2));
    scope.Var("grad")->mutable_selected_rows()->height = 5;
    EXPECT_THROW(RunOpOnScope(DecayOp("grad", 0.1f), &scope), Error);
  }
}

}  // namespace
}  // namespace rill::testing
