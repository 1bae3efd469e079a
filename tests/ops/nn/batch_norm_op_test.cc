// Tests of batch_norm and batch_norm_grad against direct loops and central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/parallel_for.h"
#include "rill/scope.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/helper_thread.h"
#include "tests/testing/training.h"

namespace rill::testing {
namespace {

// What batch_norm computes, written out per element.
struct Expected {
  std::vector<double> y, mean_out, var_out, saved_mean, saved_inv_std;
};

Expected DirectBatchNorm(const Shape& shape, const std::vector<double>& x,
                         const std::vector<double>& scale, const std::vector<double>& bias,
                         const std::vector<double>& mean, const std::vector<double>& var,
                         double momentum, double eps, bool is_test) {
  const int64_t n = shape[0], c = shape[1], hw = shape.size() == 4 ? shape[2] * shape[3] : 1;
  Expected e;
  e.y.resize(x.size());
  for (int64_t ch = 0; ch < c; ++ch) {
    double m = mean[ch], v = var[ch];
    if (!is_test) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < hw; ++j) sum += x[(i * c + ch) * hw + j];
      m = sum / static_cast<double>(n * hw);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < hw; ++j) sq += std::pow(x[(i * c + ch) * hw + j] - m, 2);
      v = sq / static_cast<double>(n * hw);
    }
    const double inv_std = 1 / std::sqrt(v + eps);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < hw; ++j) {
        const int64_t k = (i * c + ch) * hw + j;
        e.y[k] = (x[k] - m) * inv_std * scale[ch] + bias[ch];
      }
    }
    e.mean_out.push_back(is_test ? mean[ch] : momentum * mean[ch] + (1 - momentum) * m);
    e.var_out.push_back(is_test ? var[ch] : momentum * var[ch] + (1 - momentum) * v);
    e.saved_mean.push_back(m);
    e.saved_inv_std.push_back(inv_std);
  }
  return e;
}

void ExpectAllNear(const std::vector<double>& got, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " " << i;
}

AttrSetter Attrs(bool is_test, float momentum = 0.9f, float epsilon = 1e-5f) {
  return [=](proto::OpDesc* op) {
    SetAttr(op, "is_test", is_test);
    SetAttr(op, "momentum", momentum);
    SetAttr(op, "epsilon", epsilon);
  };
}

// The five inputs of batch_norm for X of `shape`; the variance is positive.
std::vector<std::pair<std::string, std::vector<Tensor>>> Inputs(const Shape& shape, uint64_t seed,
                                                                DataType dtype) {
  const Shape c{shape[1]};
  return {{"X", {RandomTensor(shape, seed, -2, 3, dtype)}},
          {"Scale", {RandomTensor(c, seed + 1, 0.5, 1.5, dtype)}},
          {"Bias", {RandomTensor(c, seed + 2, -1, 1, dtype)}},
          {"Mean", {RandomTensor(c, seed + 3, -0.5, 0.5, dtype)}},
          {"Variance", {RandomTensor(c, seed + 4, 0.5, 2, dtype)}}};
}

const std::vector<std::pair<std::string, int>> kOutputs = {
    {"Y", 1}, {"MeanOut", 1}, {"VarianceOut", 1}, {"SavedMean", 1}, {"SavedVariance", 1}};

TEST(BatchNormOpTest, ForwardMatchesDirectLoops) {
  uint64_t seed = 1;
  for (const Shape& shape :
       {Shape{4, 3}, Shape{2, 3, 4, 5}, Shape{3, 2, 1, 1}, Shape{5, 4, 3, 9}}) {
    for (bool is_test : {false, true}) {
      for (DataType dtype : {DataType::kFloat64, DataType::kFloat32}) {
        SCOPED_TRACE(ShapeToString(shape) + (is_test ? " test " : " train ") + DataTypeName(dtype));
        auto inputs = Inputs(shape, seed, dtype);
        seed += 10;
        auto out = RunOp({"batch_norm", inputs, kOutputs, Attrs(is_test, 0.8f, 1e-3f)});
        const Expected e =
            DirectBatchNorm(shape, ToDoubles(inputs[0].second[0]), ToDoubles(inputs[1].second[0]),
                            ToDoubles(inputs[2].second[0]), ToDoubles(inputs[3].second[0]),
                            ToDoubles(inputs[4].second[0]), static_cast<double>(0.8f),
                            static_cast<double>(1e-3f), is_test);
        const double tol = dtype == DataType::kFloat64 ? 1e-12 : 2e-5;
        EXPECT_EQ(out["Y"][0].shape(), shape);
        EXPECT_EQ(out["Y"][0].dtype(), dtype);
        ExpectAllNear(ToDoubles(out["Y"][0]), e.y, tol, "Y");
        ExpectAllNear(ToDoubles(out["MeanOut"][0]), e.mean_out, tol, "MeanOut");
        ExpectAllNear(ToDoubles(out["VarianceOut"][0]), e.var_out, tol, "VarianceOut");
        ExpectAllNear(ToDoubles(out["SavedMean"][0]), e.saved_mean, tol, "SavedMean");
        ExpectAllNear(ToDoubles(out["SavedVariance"][0]), e.saved_inv_std, tol, "SavedVariance");
      }
    }
  }
}

// A ResNet-sized X: its channels' sums and its planes fall into parts that a
// second thread takes (batch_norm_channels.h), with the bits of one thread,
// forward and backward, and the forward against the direct loops.
TEST(BatchNormOpTest, InPartsOnTwoThreadsTheBitsOfOne) {
  const Shape shape{64, 32, 14, 14};
  auto inputs = Inputs(shape, 500, DataType::kFloat32);
  const Tensor dy = RandomTensor(shape, 510, -1, 1, DataType::kFloat32);
  const auto run = [&] {
    auto out = RunOp({"batch_norm", inputs, kOutputs, Attrs(false)});
    auto grad = RunOp({"batch_norm_grad",
                       {inputs[0],
                        inputs[1],
                        {"SavedMean", out["SavedMean"]},
                        {"SavedVariance", out["SavedVariance"]},
                        {"Y@GRAD", {dy}}},
                       {{"X@GRAD", 1}, {"Scale@GRAD", 1}, {"Bias@GRAD", 1}},
                       [](proto::OpDesc* op) { SetAttr(op, "is_test", false); }});
    return std::vector<Tensor>{out["Y"][0],       out["SavedMean"][0],   out["SavedVariance"][0],
                               grad["X@GRAD"][0], grad["Scale@GRAD"][0], grad["Bias@GRAD"][0]};
  };
  const std::vector<Tensor> alone = run();
  const Expected e = DirectBatchNorm(shape, ToDoubles(inputs[0].second[0]),
                                     ToDoubles(inputs[1].second[0]), ToDoubles(inputs[2].second[0]),
                                     ToDoubles(inputs[3].second[0]), ToDoubles(inputs[4].second[0]),
                                     static_cast<double>(0.9f), static_cast<double>(1e-5f), false);
  ExpectAllNear(ToDoubles(alone[0]), e.y, 1e-4, "Y");
  IdleHelpers helpers([] {});
  HelperThread helper(helpers);
  ScopedParallelHelpers lend(&helpers);
  for (int rep = 0; rep < 3; ++rep) {
    const std::vector<Tensor> shared = run();
    for (size_t i = 0; i < alone.size(); ++i) {
      EXPECT_TRUE(BitEqual(shared[i], alone[i])) << "output " << i << ", repetition " << rep;
    }
  }
}

TEST(BatchNormOpTest, TrainingOutputHasZeroMeanUnitVariancePerChannel) {
  // Scale 1, bias 0: each channel of Y has mean 0 and (biased) variance var / (var + eps).
  const Shape shape{6, 2, 3, 3};
  auto inputs = Inputs(shape, 77, DataType::kFloat64);
  inputs[1].second[0] = MakeTensor<double>({2}, {1, 1});
  inputs[2].second[0] = MakeTensor<double>({2}, {0, 0});
  auto out = RunOp({"batch_norm", inputs, kOutputs, Attrs(false, 0.9f, 0.0f)});
  const std::vector<double> y = ToDoubles(out["Y"][0]);
  for (int ch = 0; ch < 2; ++ch) {
    double sum = 0, sq = 0;
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 9; ++j) sum += y[(i * 2 + ch) * 9 + j];
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 9; ++j) sq += y[(i * 2 + ch) * 9 + j] * y[(i * 2 + ch) * 9 + j];
    EXPECT_NEAR(sum / 54, 0, 1e-12);
    EXPECT_NEAR(sq / 54, 1, 1e-12);
  }
}

TEST(BatchNormOpTest, GradientMatchesNumericInTraining) {
  uint64_t seed = 300;
  for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 2, 3}, Shape{3, 2, 3, 3}}) {
    SCOPED_TRACE(ShapeToString(shape));
    GradientCheck check("batch_norm");
    for (auto& [slot, tensors] : Inputs(shape, seed, DataType::kFloat64))
      check.Input(slot, tensors[0]);
    seed += 10;
    for (const auto& [slot, count] : kOutputs) check.Output(slot, count);
    check.Attrs(Attrs(false)).Tolerance(1e-6, 1e-5).Run();
  }
}

TEST(BatchNormOpTest, GradientMatchesNumericInInference) {
  GradientCheck check("batch_norm");
  for (auto& [slot, tensors] : Inputs({3, 2, 2, 3}, 400, DataType::kFloat64))
    check.Input(slot, tensors[0]);
  for (const auto& [slot, count] : kOutputs) check.Output(slot, count);
  check.Attrs(Attrs(true)).Run();
}

TEST(BatchNormOpTest, GradMakerReadsSavedStatisticsNotRunningOnes) {
  proto::OpDesc fwd;
  fwd.set_type("batch_norm");
  SetInput(&fwd, "X", {"x"});
  SetInput(&fwd, "Scale", {"s"});
  SetInput(&fwd, "Bias", {"b"});
  SetInput(&fwd, "Mean", {"m"});
  SetInput(&fwd, "Variance", {"v"});
  SetOutput(&fwd, "Y", {"y"});
  SetOutput(&fwd, "MeanOut", {"m"});
  SetOutput(&fwd, "VarianceOut", {"v"});
  SetOutput(&fwd, "SavedMean", {"sm"});
  SetOutput(&fwd, "SavedVariance", {"sv"});
  SetAttr(&fwd, "is_test", true);
  SetAttr(&fwd, "momentum", 0.5f);
  auto grads = GetOpSchema("batch_norm").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  const proto::OpDesc& g = grads[0];
  EXPECT_EQ(g.type(), "batch_norm_grad");
  EXPECT_EQ(InputVars(g, "SavedMean"), (std::vector<std::string>{"sm"}));
  EXPECT_EQ(InputVars(g, "SavedVariance"), (std::vector<std::string>{"sv"}));
  EXPECT_TRUE(InputVars(g, "Mean").empty());
  EXPECT_EQ(OutputVars(g, "Bias@GRAD"), (std::vector<std::string>{"b@GRAD"}));
  ASSERT_NE(FindAttr(g, "is_test"), nullptr);
  EXPECT_TRUE(AttrValue<bool>(*FindAttr(g, "is_test")));
  EXPECT_EQ(FindAttr(g, "momentum"), nullptr);
}

TEST(BatchNormOpTest, MissingOutputGradientGivesZeros) {
  auto out = RunOp({"batch_norm_grad",
                    {{"X", {RandomTensor({2, 2, 2, 2}, 1)}},
                     {"Scale", {RandomTensor({2}, 2)}},
                     {"SavedMean", {RandomTensor({2}, 3)}},
                     {"SavedVariance", {RandomTensor({2}, 4, 0.5, 1)}}},
                    {{"X@GRAD", 1}, {"Scale@GRAD", 1}, {"Bias@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), std::vector<double>(16, 0.0));
  EXPECT_EQ(ToDoubles(out["Scale@GRAD"][0]), std::vector<double>(2, 0.0));
  EXPECT_EQ(ToDoubles(out["Bias@GRAD"][0]), std::vector<double>(2, 0.0));
}

// batch_norm as a program writes it: MeanOut and VarianceOut are Mean and
// Variance. Three steps on a scope move the running statistics as the
// direct loops say.
TEST(BatchNormOpTest, UpdatesRunningStatisticsInPlace) {
  const Shape shape{4, 3, 2, 2};
  Scope scope;
  auto inputs = Inputs(shape, 500, DataType::kFloat64);
  const char* names[] = {"x", "scale", "bias", "mean", "var"};
  for (size_t i = 0; i < inputs.size(); ++i) {
    *scope.Var(names[i])->mutable_tensor() = inputs[i].second[0].Clone();
  }
  proto::OpDesc op;
  op.set_type("batch_norm");
  SetInput(&op, "X", {"x"});
  SetInput(&op, "Scale", {"scale"});
  SetInput(&op, "Bias", {"bias"});
  SetInput(&op, "Mean", {"mean"});
  SetInput(&op, "Variance", {"var"});
  SetOutput(&op, "Y", {"y"});
  SetOutput(&op, "MeanOut", {"mean"});
  SetOutput(&op, "VarianceOut", {"var"});
  SetOutput(&op, "SavedMean", {"saved_mean"});
  SetOutput(&op, "SavedVariance", {"saved_var"});
  SetAttr(&op, "momentum", 0.75f);
  std::vector<double> mean = ToDoubles(inputs[3].second[0]);
  std::vector<double> var = ToDoubles(inputs[4].second[0]);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = RandomTensor(shape, 600 + step, -2, 3);
    *scope.Var("x")->mutable_tensor() = x;
    RunOpOnScope(op, &scope);
    const Expected e =
        DirectBatchNorm(shape, ToDoubles(x), ToDoubles(inputs[1].second[0]),
                        ToDoubles(inputs[2].second[0]), mean, var, 0.75, 1e-5f, false);
    mean = e.mean_out;
    var = e.var_out;
    ExpectAllNear(ToDoubles(scope.FindVar("mean")->tensor()), mean, 1e-12, "mean");
    ExpectAllNear(ToDoubles(scope.FindVar("var")->tensor()), var, 1e-12, "var");
    ExpectAllNear(ToDoubles(scope.FindVar("y")->tensor()), e.y, 1e-12, "y");
  }
}

// Runs batch_norm on X of `x` with [c] vectors of `c` elements; the caller expects a throw.
void RunShapes(const Shape& x, int64_t c, DataType vector_type = DataType::kFloat64) {
  RunOp({"batch_norm",
         {{"X", {RandomTensor(x, 1)}},
          {"Scale", {RandomTensor({c}, 2, 0.5, 1, vector_type)}},
          {"Bias", {RandomTensor({c}, 3, 0.5, 1, vector_type)}},
          {"Mean", {RandomTensor({c}, 4, 0.5, 1, vector_type)}},
          {"Variance", {RandomTensor({c}, 5, 0.5, 1, vector_type)}}},
         kOutputs,
         {}});
}

TEST(BatchNormOpTest, RejectsBadShapesNamingTheOpAndVariable) {
  try {
    RunShapes({2, 3, 4}, 3);
    ADD_FAILURE() << "rank 3 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch_norm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in_X_0"), std::string::npos) << e.what();
  }
  try {
    RunShapes({2, 3, 2, 2}, 4);
    ADD_FAILURE() << "4 channels of Scale accepted for 3 of X";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Scale"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RunShapes({2, 3}, 3, DataType::kFloat32), Error);
  EXPECT_THROW(RunOp({"batch_norm", Inputs({2, 3}, 1, DataType::kFloat64), kOutputs,
                      [](proto::OpDesc* op) { SetAttr(op, "data_layout", "NHWC"); }}),
               Error);
  EXPECT_NO_THROW(RunShapes({2, 3}, 3));
}

}  // namespace
}  // namespace rill::testing
