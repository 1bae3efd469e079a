// The layers API: shapes are inferred as ops are appended, parameters are
// initialised by the startup program, and mistakes fail where they are made.
#include "rill/builder.h"

#include <gtest/gtest.h>

#include <string>

#include "rill/executor.h"
#include "rill/validate.h"

namespace rill {
namespace {

TEST(BuilderTest, FcInfersShapesAndDeclaresParameters) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 784});
  Var h = b.Fc(x, 256, Activation::kRelu);
  EXPECT_EQ(h.shape, (Shape{-1, 256}));
  Var w = b.Lookup("fc_0.w");
  EXPECT_EQ(w.shape, (Shape{784, 256}));
  EXPECT_NO_THROW(Validate(main.desc()));
  EXPECT_NO_THROW(Validate(startup.desc()));
}

TEST(BuilderTest, StartupInitialisesParametersReproducibly) {
  auto init = [](uint64_t seed) {
    Program main, startup;
    Builder b(&main, &startup, seed);
    b.Fc(b.Data("x", {-1, 8}), 4);
    Scope scope;
    Executor().Run(startup.desc(), &scope);
    return scope.GetTensor("fc_0.w").Clone();
  };
  Tensor a = init(1), again = init(1), other = init(2);
  ASSERT_EQ(a.numel(), 32);
  bool differs = false;
  const float limit = std::sqrt(6.0f / 12.0f);
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_EQ(a.data<float>()[i], again.data<float>()[i]);
    EXPECT_LE(std::abs(a.data<float>()[i]), limit);
    differs |= a.data<float>()[i] != other.data<float>()[i];
  }
  EXPECT_TRUE(differs);
}

TEST(BuilderTest, ShapeMismatchFailsWhereTheOpIsAppended) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 4});
  Var y = b.Data("y", {-1, 5});
  try {
    b.Add(x, y);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("elementwise_add"), std::string::npos) << e.what();
  }
}

// Blocks opened and closed around their ops (how Python's `with
// loop.block():` builds a while loop): they nest, close innermost first, and
// a while or go op names only a sub-block of the block it goes in.
TEST(BuilderTest, SubBlocksOpenAndCloseInnermostFirst) {
  Program main, startup;
  Builder b(&main, &startup);
  Var i = b.Constant({1}, 0);
  Var cond = b.LessThan(i, b.Constant({1}, 3));
  const int outer = b.OpenSubBlock();
  const int inner = b.OpenSubBlock();
  EXPECT_EQ(b.current_block(), inner);
  try {
    b.CloseSubBlock(outer);
    FAIL() << "closed the outer block first";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("closing block 1 but block 2 is the one open"),
              std::string::npos)
        << e.what();
  }
  b.CloseSubBlock(inner);
  try {
    b.While(cond, 0);
    FAIL() << "a while op over block 0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("while: block 0 is not a sub-block of block 1"),
              std::string::npos)
        << e.what();
  }
  b.While(cond, inner);  // in block 1, over block 2
  b.CloseSubBlock(outer);
  EXPECT_EQ(b.current_block(), 0);
  try {
    b.Go(inner);
    FAIL() << "a go op in block 0 over block 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("go: block 2 is not a sub-block of block 0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(main.desc().blocks(1).ops(0).type(), "while");
}

}  // namespace
}  // namespace rill
