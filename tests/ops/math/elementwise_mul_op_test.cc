// Tests of elementwise_mul and its gradient.
#include "rill/executor.h"
#include "tests/ops/math/elementwise_test_util.h"

namespace rill::testing {
namespace {

TEST(ElementwiseMulOpTest, ScalesByOneElement) {
  auto out = RunOp(
      {"elementwise_mul",
       {{"X", {MakeTensor<float>({2, 2}, {1, -2, 3, 4})}}, {"Y", {MakeTensor<float>({1}, {0.5f})}}},
       {{"Out", 1}},
       {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{0.5, -1, 1.5, 2}));
}

TEST(ElementwiseMulOpTest, MatchesReferenceOnEveryBroadcast) {
  ExpectForwardMatchesReference("elementwise_mul", [](double x, double y) { return x * y; });
}

TEST(ElementwiseMulOpTest, GradientMatchesNumeric) {
  ExpectGradientsMatchNumeric("elementwise_mul");
}

TEST(ElementwiseMulOpTest, InPlaceUpdateReadsXBeforeWritingOut) {
  // Gradient clipping multiplies a gradient by a factor in place: Out is X.
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_parent_idx(-1);
  for (const char* name : {"g", "f"}) {
    auto* v = block->add_vars();
    v->set_name(name);
    v->set_kind(proto::DENSE_TENSOR);
    v->set_dtype(proto::FLOAT32);
  }
  block->mutable_vars(0)->add_shape(3);
  block->mutable_vars(1)->add_shape(1);
  auto* op = block->add_ops();
  op->set_type("elementwise_mul");
  SetInput(op, "X", {"g"});
  SetInput(op, "Y", {"f"});
  SetOutput(op, "Out", {"g"});
  Executor exe;
  Scope scope;
  auto out = exe.Run(program, &scope,
                     {{"g", MakeTensor<float>({3}, {1, 2, 3})}, {"f", MakeTensor<float>({1}, {2})}},
                     {"g"});
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2, 4, 6}));
}

proto::OpDesc MulOp(const std::string& x, const std::string& y, const std::string& out) {
  proto::OpDesc op;
  op.set_type("elementwise_mul");
  SetInput(&op, "X", {x});
  SetInput(&op, "Y", {y});
  SetOutput(&op, "Out", {out});
  return op;
}

// As in Fluid: selected rows times one element are selected rows, the same
// rows (repeats kept) with each value scaled — the dense product's rows.
TEST(ElementwiseMulOpTest, SelectedRowsTimesOneElement) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    SCOPED_TRACE(DataTypeName(dtype));
    const SelectedRows x = MakeSelectedRows({3, 0, 3}, 5, RandomTensor({3, 2}, 1, -1, 1, dtype));
    const Tensor y = RandomTensor({1}, 2, 0.5, 2, dtype);
    Scope scope;
    *scope.Var("x")->mutable_selected_rows() = x;
    scope.Var("y")->mutable_tensor()->CopyFrom(y);
    RunOpOnScope(MulOp("x", "y", "out"), &scope, proto::SELECTED_ROWS);
    const Variable* out = scope.FindVar("out");
    ASSERT_TRUE(out->holds_selected_rows());
    EXPECT_EQ(out->selected_rows().rows, x.rows);
    EXPECT_EQ(out->selected_rows().height, 5);
    // Each value as the dense op scales it.
    const auto values =
        RunOp({"elementwise_mul", {{"X", {x.value}}, {"Y", {y}}}, {{"Out", 1}}, {}});
    EXPECT_EQ(ToDoubles(out->selected_rows().value), ToDoubles(values.at("Out")[0]));
    // The dense tensor they stand for is the dense product (to rounding: a
    // repeated row's values are scaled before they add up).
    const auto dense =
        RunOp({"elementwise_mul", {{"X", {x.ToDense()}}, {"Y", {y}}}, {{"Out", 1}}, {}});
    const std::vector<double> want = ToDoubles(dense.at("Out")[0]);
    const std::vector<double> got = ToDoubles(out->selected_rows().ToDense());
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6) << k;
  }
}

// Gradient clipping scales a sparse gradient in place. The new values go to a
// new buffer: an allreduce gives every place the same merged rows, which one
// place's in-place update must not change under the others.
TEST(ElementwiseMulOpTest, SelectedRowsInPlaceLeaveASharedBufferAlone) {
  const SelectedRows x = MakeSelectedRows({1, 2}, 3, MakeTensor<double>({2, 2}, {1, 2, 3, 4}));
  Scope scope;
  *scope.Var("g")->mutable_selected_rows() = x;  // shares x.value's buffer
  scope.Var("f")->mutable_tensor()->CopyFrom(MakeTensor<double>({1}, {0.5}));
  RunOpOnScope(MulOp("g", "f", "g"), &scope);
  EXPECT_EQ(ToDoubles(scope.FindVar("g")->selected_rows().value),
            (std::vector<double>{0.5, 1, 1.5, 2}));
  EXPECT_EQ(scope.FindVar("g")->selected_rows().rows, x.rows);
  EXPECT_EQ(ToDoubles(x.value), (std::vector<double>{1, 2, 3, 4}));
}

TEST(ElementwiseMulOpTest, SelectedRowsNeedOneElementOfTheirType) {
  for (const Tensor& y : {MakeTensor<double>({2}, {1, 2}), MakeTensor<float>({1}, {2})}) {
    Scope scope;
    *scope.Var("x")->mutable_selected_rows() =
        MakeSelectedRows({0}, 2, MakeTensor<double>({1, 2}, {1, 2}));
    scope.Var("y")->mutable_tensor()->CopyFrom(y);
    EXPECT_THROW(RunOpOnScope(MulOp("x", "y", "x"), &scope), Error) << y.Describe();
  }
}

TEST(ElementwiseMulOpTest, MismatchedShapesThrow) {
  ExpectMismatchedShapesThrow("elementwise_mul");
}

}  // namespace
}  // namespace rill::testing
