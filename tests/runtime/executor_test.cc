// The reference executor's interrupt check (how Python's Ctrl-C ends a long
// step): asked between ops, it stops a run before the next op, and the
// executor runs the next step in full.
#include "rill/executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "rill/builder.h"

namespace rill {
namespace {

TEST(ExecutorTest, AnInterruptCheckStopsTheRunBeforeTheNextOp) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 2});
  Var doubled = b.Scale(x, 2.0f);
  Var tripled = b.Scale(doubled, 3.0f);
  Scope scope;
  Executor exe;
  int asked = 0;
  bool interrupt = true;
  exe.set_interrupt_check(
      [&] {
        ++asked;
        return interrupt;
      },
      std::chrono::milliseconds(0));
  auto step = exe.Prepare(main.desc(), &scope);
  Tensor ones(DataType::kFloat32, {1, 2});
  ones.Fill(1);
  try {
    exe.Run(*step, {{"x", ones}}, {tripled.name});
    FAIL() << "the run was not interrupted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kCancelled);
    EXPECT_NE(std::string(error.what()).find("interrupted before op 1 (scale)"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(asked, 1);                                         // never before the first op
  EXPECT_EQ(scope.GetTensor(doubled.name).GetAsDouble(0), 2);  // the op before it ran

  interrupt = false;
  const auto out = exe.Run(*step, {{"x", ones}}, {tripled.name});
  EXPECT_EQ(out[0].GetAsDouble(1), 6);
}

}  // namespace
}  // namespace rill
