// The normalisation layers of the builder: BatchNorm's running statistics are
// persistable state the op updates in place (no gradient, no optimizer), the
// test clone normalises with them; LayerNorm and Gelu append their ops.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/optimizer.h"
#include "rill/validate.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

const proto::OpDesc* FindOp(const Program& p, const std::string& type) {
  for (const auto& op : p.desc().blocks(0).ops()) {
    if (op.type() == type) return &op;
  }
  return nullptr;
}

TEST(BuilderNormTest, BatchNormDeclaresParametersAndRunningStatistics) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 3, 4, 4});
  Var y = b.BatchNorm(x, Activation::kRelu);
  EXPECT_EQ(y.shape, (Shape{-1, 3, 4, 4}));
  const proto::VarDesc* scale = FindVarDesc(main.desc(), 0, "batch_norm_0.scale");
  const proto::VarDesc* mean = FindVarDesc(main.desc(), 0, "batch_norm_0.mean");
  ASSERT_NE(scale, nullptr);
  ASSERT_NE(mean, nullptr);
  EXPECT_TRUE(scale->parameter());
  EXPECT_TRUE(mean->persistable());
  EXPECT_FALSE(mean->parameter());
  const proto::OpDesc* bn = FindOp(main, "batch_norm");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(OutputVar(*bn, "MeanOut"), "batch_norm_0.mean");
  EXPECT_EQ(OutputVar(*bn, "VarianceOut"), "batch_norm_0.variance");
  EXPECT_NO_THROW(Validate(main.desc()));
  EXPECT_THROW(b.BatchNorm(b.Data("z", {-1, 3, 4})), Error);
  // The test clone normalises with the running statistics.
  const Program eval = main.CloneForTest();
  const proto::Attr* is_test = FindAttr(*FindOp(eval, "batch_norm"), "is_test");
  ASSERT_NE(is_test, nullptr);
  EXPECT_TRUE(AttrValue<bool>(*is_test));
}

// Three SGD steps on the reference executor: the running statistics follow
// momentum * old + 0.1 * the batch's (X feeds batch_norm directly, so the
// batch statistics are computed here from the fed values), no gradient is
// made for them, and the scale and bias are trained.
TEST(BuilderNormTest, BatchNormTrainsAndUpdatesRunningStatistics) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var x = b.Data("x", {-1, 2});
  Var h = b.BatchNorm(x, Activation::kNone, 0.9f, 1e-5f);
  Var f = b.Fc(h, 1);
  Var loss = b.Mean(b.Mul(f, f));
  SGD(0.1f).Minimize(b, loss);
  EXPECT_EQ(FindVarDesc(main.desc(), 0, "batch_norm_0.mean@GRAD"), nullptr);
  ASSERT_NE(FindVarDesc(main.desc(), 0, "batch_norm_0.scale@GRAD"), nullptr);
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  std::vector<double> mean = {0, 0}, var = {1, 1};
  for (int step = 0; step < 3; ++step) {
    const Tensor batch = testing::RandomTensor({8, 2}, 10 + step, -1, 3, DataType::kFloat32);
    exe.Run(main.desc(), &scope, {{"x", batch}}, {});
    for (int c = 0; c < 2; ++c) {
      double s = 0, q = 0;
      for (int i = 0; i < 8; ++i) s += batch.data<float>()[i * 2 + c];
      const double m = s / 8;
      for (int i = 0; i < 8; ++i) q += std::pow(batch.data<float>()[i * 2 + c] - m, 2);
      mean[c] = 0.9 * mean[c] + 0.1 * m;
      var[c] = 0.9 * var[c] + 0.1 * q / 8;
    }
    const Tensor& got_mean = scope.GetTensor("batch_norm_0.mean");
    const Tensor& got_var = scope.GetTensor("batch_norm_0.variance");
    for (int c = 0; c < 2; ++c) {
      EXPECT_NEAR(got_mean.data<float>()[c], mean[c], 1e-5) << "step " << step;
      EXPECT_NEAR(got_var.data<float>()[c], var[c], 1e-5) << "step " << step;
    }
  }
  const Tensor& scale = scope.GetTensor("batch_norm_0.scale");
  EXPECT_TRUE(scale.data<float>()[0] != 1.0f || scale.data<float>()[1] != 1.0f);
}

TEST(BuilderNormTest, LayerNormAndGeluAppendTheirOps) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, 4, 6});
  Var y = b.Gelu(b.LayerNorm(x, 2));
  EXPECT_EQ(y.shape, (Shape{-1, 4, 6}));
  EXPECT_EQ(b.Lookup("layer_norm_0.scale").shape, (Shape{6}));
  EXPECT_NE(FindOp(main, "gelu"), nullptr);
  EXPECT_THROW(b.LayerNorm(x, 3), Error);
  EXPECT_THROW(b.LayerNorm(b.Data("u", {-1, -1}), 1), Error);
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  const Tensor in = testing::RandomTensor({2, 4, 6}, 1, -2, 2, DataType::kFloat32);
  auto out = exe.Run(main.desc(), &scope, {{"x", in}}, {y.name});
  // Scale 1, bias 0: the layer norm's rows have mean 0; gelu(v) = v * Phi(v).
  const float* xs = in.data<float>();
  for (int r = 0; r < 8; ++r) {
    double s = 0, q = 0;
    for (int j = 0; j < 6; ++j) s += xs[r * 6 + j];
    const double m = s / 6;
    for (int j = 0; j < 6; ++j) q += std::pow(xs[r * 6 + j] - m, 2);
    for (int j = 0; j < 6; ++j) {
      const double v = (xs[r * 6 + j] - m) / std::sqrt(q / 6 + 1e-5);
      const double want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      EXPECT_NEAR(out[0].data<float>()[r * 6 + j], want, 1e-5);
    }
  }
}

}  // namespace
}  // namespace rill
