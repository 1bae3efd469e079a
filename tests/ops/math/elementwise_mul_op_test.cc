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

TEST(ElementwiseMulOpTest, MismatchedShapesThrow) {
  ExpectMismatchedShapesThrow("elementwise_mul");
}

}  // namespace
}  // namespace rill::testing
