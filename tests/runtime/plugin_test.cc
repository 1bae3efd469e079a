// Plugins: a user's op loaded from a shared library works from the builder,
// from a program file and through its gradient (checked numerically); a
// plugin that clashes with a registered op, was built against another
// version, is no plugin or is missing fails with an error naming it and
// registers nothing.
#include "rill/plugin.h"

#include <gtest/gtest.h>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/op_registry.h"
#include "rill/program_io.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

std::string ErrorOf(const std::string& path) {
  try {
    LoadPlugin(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PluginTest, ACustomOpRunsFromTheBuilderAndAProgramFile) {
  const std::vector<std::string> types = LoadPlugin(RILL_CUBE_PLUGIN);
  // Empty when another test of this process loaded it first.
  if (!types.empty()) {
    EXPECT_EQ(types, (std::vector<std::string>{"cube", "cube_grad"}));
  }
  EXPECT_TRUE(LoadPlugin(RILL_CUBE_PLUGIN).empty()) << "a second load does nothing";
  ASSERT_NE(FindOpSchema("cube"), nullptr);

  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 3});
  Var y = b.AppendOp("cube", {{"X", {x}}}, {{"Out", 1}})[0];
  Tensor input = testing::MakeTensor<float>({1, 3}, {1, -2, 0.5f});
  Executor exe;
  Scope scope;
  auto out = exe.Run(main.desc(), &scope, {{"x", input}}, {y.name});
  EXPECT_EQ(testing::ToDoubles(out[0]), (std::vector<double>{1, -8, 0.125}));

  // The same program saved and read back as text.
  const proto::ProgramDesc parsed = ParseProgramText(ProgramToText(main.desc()));
  Scope scope2;
  out = exe.Run(parsed, &scope2, {{"x", input}}, {y.name});
  EXPECT_EQ(testing::ToDoubles(out[0]), (std::vector<double>{1, -8, 0.125}));
}

TEST(PluginTest, TheCustomOpsGradientMatchesFiniteDifferences) {
  LoadPlugin(RILL_CUBE_PLUGIN);
  testing::GradientCheck("cube")
      .Input("X", testing::RandomTensor({2, 3}, 7, -1.0, 1.0, DataType::kFloat64))
      .Output("Out")
      .Run();
}

TEST(PluginTest, AClashingPluginRegistersNoneOfItsOps) {
  const std::string error = ErrorOf(RILL_CLASHING_PLUGIN);
  EXPECT_TRUE(Contains(error, RILL_CLASHING_PLUGIN)) << error;
  EXPECT_TRUE(Contains(error, "op type \"scale\" is already registered")) << error;
  EXPECT_EQ(FindOpSchema("plugin_never_registered"), nullptr);
  EXPECT_NE(FindOpSchema("scale"), nullptr);  // Rill's own is untouched
}

TEST(PluginTest, APluginBuiltAgainstAnotherVersionIsRefused) {
  const std::string error = ErrorOf(RILL_OLD_PLUGIN);
  EXPECT_TRUE(Contains(error, "was built against Rill 0.0.1")) << error;
  EXPECT_TRUE(Contains(error, RILL_OLD_PLUGIN)) << error;
  EXPECT_EQ(FindOpSchema("plugin_from_the_past"), nullptr);
  EXPECT_TRUE(PluginVersionCompatible(RILL_VERSION_STRING));
  EXPECT_FALSE(PluginVersionCompatible("not a version"));
}

TEST(PluginTest, ALibraryThatIsNoPluginOrNoFileIsNamed) {
  std::string error = ErrorOf(RILL_NOT_A_PLUGIN);
  EXPECT_TRUE(Contains(error, "is not a Rill plugin")) << error;
  error = ErrorOf("/no/such/libplugin.so");
  EXPECT_TRUE(Contains(error, "plugin \"/no/such/libplugin.so\": no such file")) << error;
}

}  // namespace
}  // namespace rill
