// Tests of sum (n-ary, in place) and its gradient.
#include <gtest/gtest.h>

#include "rill/executor.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

TEST(SumOpTest, AddsThreeInputs) {
  auto out = RunOp({"sum",
                    {{"X",
                      {MakeTensor<float>({3}, {1, 2, 3}), MakeTensor<float>({3}, {10, 20, 30}),
                       MakeTensor<float>({3}, {100, 200, 300})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{111, 222, 333}));
}

TEST(SumOpTest, SumsIntegers) {
  auto out = RunOp({"sum",
                    {{"X", {MakeTensor<int64_t>({2}, {1, 2}), MakeTensor<int64_t>({2}, {3, 4})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{4, 6}));
}

// sum with Out = X[which]: accumulates in place, as append_backward does.
std::vector<double> SumInto(int which) {
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_parent_idx(-1);
  const std::vector<std::string> names = {"a", "b", "c"};
  for (const auto& name : names) {
    auto* v = block->add_vars();
    v->set_name(name);
    v->set_kind(proto::DENSE_TENSOR);
    v->set_dtype(proto::FLOAT32);
    v->add_shape(2);
  }
  auto* op = block->add_ops();
  op->set_type("sum");
  SetInput(op, "X", names);
  SetOutput(op, "Out", {names[which]});
  Executor exe;
  Scope scope;
  auto out = exe.Run(program, &scope,
                     {{"a", MakeTensor<float>({2}, {1, 2})},
                      {"b", MakeTensor<float>({2}, {10, 20})},
                      {"c", MakeTensor<float>({2}, {100, 200})}},
                     {names[which]});
  return ToDoubles(out[0]);
}

TEST(SumOpTest, InPlaceIntoAnyInputKeepsEveryTerm) {
  for (int which = 0; which < 3; ++which) {
    EXPECT_EQ(SumInto(which), (std::vector<double>{111, 222})) << "Out is input " << which;
  }
}

TEST(SumOpTest, GradientMatchesNumeric) {
  GradientCheck("sum")
      .Inputs("X", {RandomTensor({2, 3}, 1), RandomTensor({2, 3}, 2), RandomTensor({2, 3}, 3)})
      .Output("Out")
      .Run();
}

TEST(SumOpTest, GradientIsOneAssignPerInput) {
  proto::OpDesc fwd;
  fwd.set_type("sum");
  SetInput(&fwd, "X", {"a", "b"});
  SetOutput(&fwd, "Out", {"s"});
  auto grads = GetOpSchema("sum").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[1].type(), "assign");
  EXPECT_EQ(InputVars(grads[1], "X"), (std::vector<std::string>{"s@GRAD"}));
  EXPECT_EQ(OutputVars(grads[1], "Out"), (std::vector<std::string>{"b@GRAD"}));
}

TEST(SumOpTest, MismatchedShapesThrowNamingTheInput) {
  try {
    RunOp({"sum",
           {{"X", {MakeTensor<float>({2}, {1, 2}), MakeTensor<float>({3}, {1, 2, 3})}}},
           {{"Out", 1}},
           {}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rill::testing
