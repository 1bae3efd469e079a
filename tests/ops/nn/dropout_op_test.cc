// Tests of dropout and dropout_grad.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/executor.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

AttrSetter Prob(float p, const char* implementation = "upscale_in_train") {
  return [p, implementation](proto::OpDesc* op) {
    SetAttr(op, "dropout_prob", p);
    SetAttr(op, "dropout_implementation", implementation);
  };
}

// A one-op program: mask and out of dropout over x, all float32 of `shape`.
proto::ProgramDesc DropoutProgram(const Shape& shape, uint64_t random_seed, int64_t seed_attr) {
  proto::ProgramDesc program;
  program.set_random_seed(random_seed);
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  for (const char* name : {"x", "out", "mask"}) {
    auto* v = block->add_vars();
    v->set_name(name);
    v->set_kind(proto::DENSE_TENSOR);
    v->set_dtype(proto::FLOAT32);
    for (auto d : shape) v->add_shape(d);
  }
  auto* op = block->add_ops();
  op->set_type("dropout");
  SetInput(op, "X", {"x"});
  SetOutput(op, "Out", {"out"});
  SetOutput(op, "Mask", {"mask"});
  SetAttr(op, "dropout_prob", 0.5f);
  if (seed_attr != 0) SetAttr(op, "seed", seed_attr);
  return program;
}

TEST(DropoutOpTest, TestModeUpscaleInTrainPassesXThrough) {
  auto out = RunOp({"dropout",
                    {{"X", {MakeTensor<float>({2, 2}, {1, -2, 3, 4})}}},
                    {{"Out", 1}, {"Mask", 1}},
                    [](proto::OpDesc* op) {
                      SetAttr(op, "dropout_prob", 0.9f);
                      SetAttr(op, "is_test", true);
                    }});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{1, -2, 3, 4}));
  EXPECT_EQ(ToDoubles(out["Mask"][0]), (std::vector<double>{1, 1, 1, 1}));
}

TEST(DropoutOpTest, TestModeDowngradeInInferScalesByKeepProbability) {
  auto out = RunOp({"dropout",
                    {{"X", {MakeTensor<double>({3}, {1, -2, 4})}}},
                    {{"Out", 1}},
                    [](proto::OpDesc* op) {
                      Prob(0.25f, "downgrade_in_infer")(op);
                      SetAttr(op, "is_test", true);
                    }});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{0.75, -1.5, 3}));
}

TEST(DropoutOpTest, TrainingDropsAboutPAndUpscalesTheRest) {
  const float p = 0.3f;
  Tensor x = RandomTensor({200, 500}, 9, 0.5, 1.5, DataType::kFloat32);
  auto out = RunOp({"dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}}, Prob(p)});
  const float* in = x.data<float>();
  const float* o = out["Out"][0].data<float>();
  const float* m = out["Mask"][0].data<float>();
  ASSERT_EQ(out["Mask"][0].shape(), (Shape{200, 500}));
  const float kept = 1.0f / (1.0f - p);
  int64_t zeros = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_TRUE(m[i] == 0.0f || m[i] == kept) << i << ": " << m[i];
    ASSERT_EQ(o[i], in[i] * m[i]) << i;
    zeros += m[i] == 0.0f;
  }
  EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(x.numel()), p, 0.01);
}

TEST(DropoutOpTest, DowngradeInInferTrainingMaskIsZeroOrOne) {
  Tensor x = RandomTensor({1001}, 4, 0.5, 1.5);
  auto out =
      RunOp({"dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}}, Prob(0.5f, "downgrade_in_infer")});
  auto in = ToDoubles(x);
  auto o = ToDoubles(out["Out"][0]);
  auto m = ToDoubles(out["Mask"][0]);
  int64_t zeros = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(m[i] == 0.0 || m[i] == 1.0) << i;
    EXPECT_EQ(o[i], in[i] * m[i]) << i;
    zeros += m[i] == 0.0;
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 1001.0, 0.5, 0.06);
}

TEST(DropoutOpTest, ProbabilityZeroKeepsAllAndOneDropsAll) {
  Tensor x = RandomTensor({257}, 5, 0.5, 1.5);
  auto keep = RunOp({"dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}}, Prob(0.0f)});
  EXPECT_EQ(ToDoubles(keep["Out"][0]), ToDoubles(x));
  auto drop = RunOp({"dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}}, Prob(1.0f)});
  EXPECT_EQ(ToDoubles(drop["Out"][0]), std::vector<double>(257, 0.0));
  EXPECT_EQ(ToDoubles(drop["Mask"][0]), std::vector<double>(257, 0.0));
}

TEST(DropoutOpTest, GradKernelIsOutputGradientTimesMask) {
  auto out = RunOp({"dropout_grad",
                    {{"Mask", {MakeTensor<float>({4}, {0, 2, 2, 0})}},
                     {"Out@GRAD", {MakeTensor<float>({4}, {1, 2, 3, 4})}}},
                    {{"X@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 4, 6, 0}));
}

TEST(DropoutOpTest, GradientMatchesNumeric) {
  // The harness re-runs a fresh program per evaluation, so every run draws the same mask.
  GradientCheck("dropout")
      .Input("X", RandomTensor({7}, 1))
      .Output("Out")
      .Output("Mask")
      .Attrs(Prob(0.4f))
      .Run();
  GradientCheck("dropout")
      .Input("X", RandomTensor({3, 4}, 2))
      .Output("Out")
      .Output("Mask")
      .Attrs(Prob(0.5f))
      .Run();
  GradientCheck("dropout")
      .Input("X", RandomTensor({2, 3, 4}, 3))
      .Output("Out")
      .Output("Mask")
      .Attrs(Prob(0.3f, "downgrade_in_infer"))
      .Run();
}

TEST(DropoutOpTest, RunsOfOnePreparedProgramDrawNewMasks) {
  const Shape shape = {64, 32};
  Tensor x = RandomTensor(shape, 6, 0.5, 1.5, DataType::kFloat32);
  Executor exe;
  Scope scope;
  auto prepared = exe.Prepare(DropoutProgram(shape, 3, 0), &scope);
  const auto first = ToDoubles(exe.Run(*prepared, {{"x", x}}, {"mask"})[0]);
  const auto second = ToDoubles(exe.Run(*prepared, {{"x", x}}, {"mask"})[0]);
  EXPECT_NE(first, second);

  // A fresh preparation of the same program starts the same sequence again.
  Scope other_scope;
  auto again = exe.Prepare(DropoutProgram(shape, 3, 0), &other_scope);
  EXPECT_EQ(ToDoubles(exe.Run(*again, {{"x", x}}, {"mask"})[0]), first);
}

TEST(DropoutOpTest, SeedAttributeOverridesProgramSeed) {
  const Shape shape = {100};
  Tensor x = RandomTensor(shape, 6, 0.5, 1.5, DataType::kFloat32);
  Executor exe;
  Scope a, b, c;
  auto mask_a = ToDoubles(exe.Run(DropoutProgram(shape, 1, 42), &a, {{"x", x}}, {"mask"})[0]);
  auto mask_b = ToDoubles(exe.Run(DropoutProgram(shape, 2, 42), &b, {{"x", x}}, {"mask"})[0]);
  auto mask_c = ToDoubles(exe.Run(DropoutProgram(shape, 2, 0), &c, {{"x", x}}, {"mask"})[0]);
  EXPECT_EQ(mask_a, mask_b);
  EXPECT_NE(mask_a, mask_c);
}

TEST(DropoutOpTest, BadAttributesThrow) {
  Tensor x = RandomTensor({4}, 1);
  EXPECT_THROW(RunOp({"dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}}, Prob(1.5f)}), Error);
  EXPECT_THROW(RunOp({"dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}}, Prob(-0.1f)}), Error);
  EXPECT_THROW(RunOp({"dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}}, Prob(0.5f, "bogus")}),
               Error);
}

TEST(DropoutOpTest, TrainingWithoutMaskThrows) {
  EXPECT_THROW(RunOp({"dropout", {{"X", {RandomTensor({4}, 1)}}}, {{"Out", 1}}, Prob(0.5f)}),
               Error);
}

TEST(DropoutOpTest, MismatchedGradientShapeThrows) {
  EXPECT_THROW(RunOp({"dropout_grad",
                      {{"Mask", {MakeTensor<float>({2, 3}, {})}},
                       {"Out@GRAD", {MakeTensor<float>({2, 2}, {})}}},
                      {{"X@GRAD", 1}},
                      {}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
