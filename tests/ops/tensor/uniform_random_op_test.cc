// Tests of uniform_random.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/error.h"
#include "rill/executor.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

Tensor Uniform(const std::vector<int64_t>& shape, float min, float max, int seed,
               const std::string& dtype = "float32") {
  return RunOp({"uniform_random", {}, {{"Out", 1}}, [&](proto::OpDesc* op) {
                  SetAttr(op, "shape", shape);
                  SetAttr(op, "dtype", dtype);
                  SetAttr(op, "min", min);
                  SetAttr(op, "max", max);
                  SetAttr(op, "seed", seed);
                }})["Out"][0];
}

TEST(UniformRandomOpTest, SameSeedSameValues) {
  const Tensor a = Uniform({100}, -1, 1, 42);
  const Tensor b = Uniform({100}, -1, 1, 42);
  EXPECT_EQ(a.dtype(), DataType::kFloat32);
  EXPECT_EQ(a.shape(), (Shape{100}));
  EXPECT_EQ(ToDoubles(a), ToDoubles(b));
}

TEST(UniformRandomOpTest, DifferentSeedsDifferentValues) {
  const auto a = ToDoubles(Uniform({100}, -1, 1, 1));
  const auto b = ToDoubles(Uniform({100}, -1, 1, 2));
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 3);
}

TEST(UniformRandomOpTest, StatisticsMatchTheInterval) {
  for (const std::string dtype : {"float32", "float64"}) {
    const Tensor t = Uniform({400, 500}, -2, 3, 7, dtype);
    EXPECT_EQ(t.dtype(), ParseDataType(dtype));
    const auto v = ToDoubles(t);
    double sum = 0, sum_sq = 0, lo = 1e9, hi = -1e9;
    for (double x : v) {
      sum += x;
      sum_sq += x * x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    const double n = static_cast<double>(v.size());
    const double mean = sum / n;
    const double var = sum_sq / n - mean * mean;
    EXPECT_GE(lo, -2.0) << dtype;
    EXPECT_LT(hi, 3.0) << dtype;
    EXPECT_LT(lo, -1.99) << dtype;  // the whole interval is covered
    EXPECT_GT(hi, 2.99) << dtype;
    EXPECT_NEAR(mean, 0.5, 0.02) << dtype;
    EXPECT_NEAR(var, 25.0 / 12.0, 0.03) << dtype;
  }
}

TEST(UniformRandomOpTest, Float32AndFloat64DrawTheSameNumbers) {
  const auto f = ToDoubles(Uniform({50}, -1, 1, 9, "float32"));
  const auto d = ToDoubles(Uniform({50}, -1, 1, 9, "float64"));
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-7);
}

TEST(UniformRandomOpTest, GeneratorAdvancesAcrossRunsAndFollowsProgramSeed) {
  proto::ProgramDesc program;
  program.set_random_seed(11);
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  auto* var = block->add_vars();
  var->set_name("out");
  var->set_kind(proto::DENSE_TENSOR);
  var->set_dtype(proto::FLOAT32);
  var->add_shape(20);
  auto* op = block->add_ops();
  op->set_type("uniform_random");
  SetOutput(op, "Out", {"out"});
  SetAttr(op, "shape", std::vector<int64_t>{20});

  Executor exe;
  Scope scope1;
  auto prepared = exe.Prepare(program, &scope1);
  const auto first = ToDoubles(exe.Run(*prepared, {}, {"out"})[0]);
  const auto second = ToDoubles(exe.Run(*prepared, {}, {"out"})[0]);
  EXPECT_NE(first, second);

  Scope scope2;  // a fresh preparation starts the sequence again
  EXPECT_EQ(ToDoubles(exe.Run(program, &scope2, {}, {"out"})[0]), first);

  program.set_random_seed(12);
  Scope scope3;
  EXPECT_NE(ToDoubles(exe.Run(program, &scope3, {}, {"out"})[0]), first);
}

TEST(UniformRandomOpTest, RejectsBadAttributes) {
  EXPECT_THROW(Uniform({4}, 1, -1, 1), Error);                           // min > max
  EXPECT_THROW(Uniform({4}, -1, 1, 1, "int32"), Error);                  // not a float type
  EXPECT_THROW(Uniform({4, -2}, -1, 1, 1), Error);                       // negative dim
  EXPECT_THROW(RunOp({"uniform_random", {}, {{"Out", 1}}, {}}), Error);  // no shape
}

}  // namespace
}  // namespace rill::testing
