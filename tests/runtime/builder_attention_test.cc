// The attention layers of the builder (runtime/program/builder_attention.cc):
// gradients of MultiHeadSelfAttention (with and without a key mask) and of
// TransformerEncoderLayer against central differences in float64, with
// respect to the input and the parameters; a masked key changes no other
// token's output; LayerNorm at begin_norm_axis 2 normalises each token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rill/backward.h"
#include "rill/builder.h"
#include "rill/executor.h"
#include "tests/testing/gradient_check.h"

namespace rill {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace builder_attention_test {

using testing::RandomTensor;
constexpr DataType kF64 = DataType::kFloat64;
constexpr int64_t kBatch = 2, kTokens = 3, kWidth = 4;

// The input x [2, 3, 4] as a trainable parameter (data gets no gradient), so
// that backward computes x@GRAD.
Var InputParameter(Builder& b) {
  return b.Parameter("x", {kBatch, kTokens, kWidth}, Initializer::Uniform(-1, 1), kF64);
}

// Key mask [2, 1, 1, 3]: sample 0 attends to keys 0 and 1 only, sample 1 to all.
Tensor KeyMask() {
  return testing::MakeTensor<double>({kBatch, 1, 1, kTokens}, {1, 1, 0, 1, 1, 1});
}

// loss = mean((layer(x, mask) - target)^2), the mask fed as KeyMask() where
// `masked`, else absent. Appends backward and compares each element of the
// gradients of `checked` (parameter names) with (L(p + d) - L(p - d)) / 2d.
using Layer = std::function<Var(Builder&, const Var& x, const std::optional<Var>& mask)>;
void CheckGradients(const Layer& layer, bool masked, const std::vector<std::string>& checked) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var x = InputParameter(b);
  Var target = b.Data("target", {-1, kTokens, kWidth}, kF64);
  std::optional<Var> mask;
  if (masked) mask = b.Data("mask", {-1, 1, 1, kTokens}, kF64);
  Var loss = b.Mean(b.SquareErrorCost(layer(b, x, mask), target));
  Program forward = main;
  const std::vector<ParamGrad> pairs = AppendBackward(&main, loss.name);
  FeedList feeds = {{"target", RandomTensor({kBatch, kTokens, kWidth}, 11)}};
  if (masked) feeds.push_back({"mask", KeyMask()});
  Executor exe;
  Scope scope;
  exe.Run(startup.desc(), &scope);
  auto step = exe.Prepare(forward.desc(), &scope);
  auto loss_at = [&]() { return exe.Run(*step, feeds, {loss.name})[0].GetAsDouble(0); };
  for (const std::string& name : checked) {
    SCOPED_TRACE(name);
    auto pair = std::find_if(pairs.begin(), pairs.end(),
                             [&](const ParamGrad& p) { return p.param == name; });
    ASSERT_NE(pair, pairs.end()) << "no gradient for " << name;
    const Tensor grad = exe.Run(main.desc(), &scope, feeds, {pair->grad})[0];
    Tensor* param = scope.GetMutableTensor(name);
    ASSERT_EQ(param->numel(), grad.numel());
    constexpr double kDelta = 1e-6;
    for (int64_t k = 0; k < param->numel(); ++k) {
      double* p = param->mutable_data<double>() + k;
      const double saved = *p;
      *p = saved + kDelta;
      const double up = loss_at();
      *p = saved - kDelta;
      const double down = loss_at();
      *p = saved;
      const double numeric = (up - down) / (2 * kDelta);
      EXPECT_NEAR(grad.GetAsDouble(k), numeric, 1e-6 + 1e-5 * std::abs(numeric)) << "element " << k;
    }
  }
}

// fc_0: the query projection, fc_1: the key projection (a weight only); in
// the encoder layer fc_5 is the FFN's second fc.
TEST(BuilderAttentionTest, SelfAttentionGradientsMatchNumericGradients) {
  CheckGradients([](Builder& b, const Var& x,
                    const std::optional<Var>&) { return b.MultiHeadSelfAttention(x, 2); },
                 false, {"x", "fc_0.w", "fc_1.w"});
}

TEST(BuilderAttentionTest, MaskedSelfAttentionGradientsMatchNumericGradients) {
  CheckGradients(
      [](Builder& b, const Var& x, const std::optional<Var>& mask) {
        return b.MultiHeadSelfAttention(x, 2, mask);
      },
      true, {"x", "fc_0.w", "fc_1.w"});
}

TEST(BuilderAttentionTest, EncoderLayerGradientsMatchNumericGradients) {
  CheckGradients(
      [](Builder& b, const Var& x, const std::optional<Var>& mask) {
        return b.TransformerEncoderLayer(x, 2, 5, /*dropout=*/0, mask);
      },
      true, {"x", "fc_0.w", "fc_1.w", "layer_norm_0.scale", "fc_5.w"});
}

// Sample 0 does not attend to key 2: changing token 2 of its input changes
// its token 2's output only (token 2 still queries), where without the mask
// it changes every token's.
TEST(BuilderAttentionTest, AMaskedKeyChangesNoOtherTokensOutput) {
  for (bool masked : {true, false}) {
    SCOPED_TRACE(masked ? "masked" : "unmasked");
    Program main, startup;
    Builder b(&main, &startup, 3);
    Var x = b.Data("x", {-1, kTokens, kWidth}, kF64);
    Var mask = b.Data("mask", {-1, 1, 1, kTokens}, kF64);
    Var out = b.MultiHeadSelfAttention(x, 2, mask);
    Executor exe;
    Scope scope;
    exe.Run(startup.desc(), &scope);
    Tensor input = RandomTensor({kBatch, kTokens, kWidth}, 5);
    const Tensor mask_value = masked ? KeyMask() : RandomTensor({kBatch, 1, 1, kTokens}, 1, 1, 2);
    const Tensor before =
        exe.Run(main.desc(), &scope, {{"x", input}, {"mask", mask_value}}, {out.name})[0];
    input.mutable_data<double>()[2 * kWidth] += 0.5;  // sample 0, token 2, feature 0
    const Tensor after =
        exe.Run(main.desc(), &scope, {{"x", input}, {"mask", mask_value}}, {out.name})[0];
    for (int64_t token = 0; token < kTokens; ++token) {
      bool changed = false;
      for (int64_t e = 0; e < kWidth; ++e) {
        const int64_t i = token * kWidth + e;
        changed = changed || before.GetAsDouble(i) != after.GetAsDouble(i);
      }
      EXPECT_EQ(changed, !masked || token == 2) << "token " << token;
    }
  }
}

// layer_norm at begin_norm_axis 2 on [N, T, E] treats each of the N * T
// tokens as a row: every token's E features get mean 0 and variance 1.
TEST(BuilderAttentionTest, LayerNormOverTheLastAxisNormalisesEachToken) {
  Program main, startup;
  Builder b(&main, &startup);
  Var x = b.Data("x", {-1, kTokens, kWidth}, kF64);
  Var y = b.LayerNorm(x, /*begin_norm_axis=*/2, /*epsilon=*/0);
  Executor exe;
  Scope scope;
  exe.Run(startup.desc(), &scope);
  const Tensor out = exe.Run(main.desc(), &scope,
                             {{"x", RandomTensor({kBatch, kTokens, kWidth}, 9)}}, {y.name})[0];
  ASSERT_EQ(out.shape(), (Shape{kBatch, kTokens, kWidth}));
  for (int64_t token = 0; token < kBatch * kTokens; ++token) {
    double sum = 0, squares = 0;
    for (int64_t e = 0; e < kWidth; ++e) {
      const double v = out.GetAsDouble(token * kWidth + e);
      sum += v;
      squares += v * v;
    }
    EXPECT_NEAR(sum / kWidth, 0, 1e-12) << "token " << token;
    EXPECT_NEAR(squares / kWidth, 1, 1e-9) << "token " << token;
  }
}

}  // namespace builder_attention_test
}  // namespace rill
