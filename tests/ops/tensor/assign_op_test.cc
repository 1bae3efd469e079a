// Tests of assign (its gradient is an assign of Out@GRAD).
#include <gtest/gtest.h>

#include "rill/error.h"
#include "rill/executor.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(AssignOpTest, CopiesValuesOfAnyType) {
  const Tensor x = RandomTensor({2, 3}, 1);
  auto out = RunOp({"assign", {{"X", {x}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(out["Out"][0].shape(), (Shape{2, 3}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), ToDoubles(x));
  out = RunOp({"assign", {{"X", {MakeTensor<int32_t>({3}, {4, -5, 6})}}}, {{"Out", 1}}, {}});
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kInt32);
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{4, -5, 6}));
}

TEST(AssignOpTest, OutHasItsOwnMemory) {
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  for (const char* name : {"x", "y"}) {
    auto* var = block->add_vars();
    var->set_name(name);
    var->set_kind(proto::DENSE_TENSOR);
    var->set_dtype(proto::FLOAT32);
    var->add_shape(4);
  }
  auto* op = block->add_ops();
  op->set_type("assign");
  SetInput(op, "X", {"x"});
  SetOutput(op, "Out", {"y"});
  Scope scope;
  Tensor x(DataType::kFloat32, {4});
  x.Fill(3);
  Executor exe;
  auto prepared = exe.Prepare(program, &scope);
  exe.Run(*prepared, {{"x", x}});
  const void* first = scope.GetTensor("y").raw_data();
  EXPECT_NE(first, x.raw_data());
  x.Fill(5);  // changing X afterwards does not change Out
  EXPECT_EQ(ToDoubles(scope.GetTensor("y")), std::vector<double>(4, 3));
  exe.Run(*prepared, {{"x", x}});
  EXPECT_EQ(scope.GetTensor("y").raw_data(), first);  // the buffer is reused
  EXPECT_EQ(ToDoubles(scope.GetTensor("y")), std::vector<double>(4, 5));
}

TEST(AssignOpTest, GradientIsAnAssign) {
  proto::OpDesc fwd;
  fwd.set_type("assign");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Out", {"y"});
  auto grads = GetOpSchema("assign").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "assign");
  EXPECT_EQ(InputVars(grads[0], "X"), (std::vector<std::string>{"y@GRAD"}));
  EXPECT_EQ(OutputVars(grads[0], "Out"), (std::vector<std::string>{"x@GRAD"}));
}

TEST(AssignOpTest, GradientMatchesNumeric) {
  GradientCheck("assign").Input("X", RandomTensor({3}, 1)).Output("Out").Run();
  GradientCheck("assign").Input("X", RandomTensor({2, 3, 2}, 2)).Output("Out").Run();
}

TEST(AssignOpTest, RejectsBadInput) {
  EXPECT_THROW(RunOp({"assign", {}, {{"Out", 1}}, {}}), Error);
  EXPECT_THROW(
      RunOp({"assign", {{"X", {RandomTensor({2}, 1), RandomTensor({2}, 2)}}}, {{"Out", 1}}, {}}),
      Error);
}

}  // namespace
}  // namespace rill::testing
