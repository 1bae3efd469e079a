// Tests of layer_norm and layer_norm_grad against direct loops and central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace layer_norm_op_test {

struct Expected {
  std::vector<double> y, mean, var;
};

// rows x cols, Scale and Bias empty when absent.
Expected DirectLayerNorm(const std::vector<double>& x, int64_t rows, int64_t cols,
                         const std::vector<double>& scale, const std::vector<double>& bias,
                         double eps) {
  Expected e;
  e.y.resize(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < cols; ++j) sum += x[r * cols + j];
    const double m = sum / static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) sq += std::pow(x[r * cols + j] - m, 2);
    const double v = sq / static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) {
      double y = (x[r * cols + j] - m) / std::sqrt(v + eps);
      if (!scale.empty()) y *= scale[j];
      if (!bias.empty()) y += bias[j];
      e.y[r * cols + j] = y;
    }
    e.mean.push_back(m);
    e.var.push_back(v);
  }
  return e;
}

void ExpectAllNear(const std::vector<double>& got, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " " << i;
}

AttrSetter Axis(int axis, float epsilon = 1e-5f) {
  return [=](proto::OpDesc* op) {
    SetAttr(op, "begin_norm_axis", axis);
    SetAttr(op, "epsilon", epsilon);
  };
}

struct Case {
  Shape shape;
  int axis;
  int64_t rows, cols;
};

const std::vector<Case> kCases = {
    {{4, 6}, 1, 4, 6}, {{2, 3, 5}, 2, 6, 5}, {{2, 3, 5}, 1, 2, 15}, {{3, 2, 2, 11}, 3, 12, 11}};

TEST(LayerNormOpTest, ForwardMatchesDirectLoops) {
  uint64_t seed = 1;
  for (const Case& c : kCases) {
    for (int with = 0; with < 4; ++with) {  // bit 0: Scale, bit 1: Bias
      for (DataType dtype : {DataType::kFloat64, DataType::kFloat32}) {
        SCOPED_TRACE(ShapeToString(c.shape) + " axis " + std::to_string(c.axis) + " with " +
                     std::to_string(with) + " " + DataTypeName(dtype));
        const Tensor x = RandomTensor(c.shape, seed++, -2, 3, dtype);
        const Tensor scale = RandomTensor({c.cols}, seed++, 0.5, 1.5, dtype);
        const Tensor bias = RandomTensor({c.cols}, seed++, -1, 1, dtype);
        OpRun run{"layer_norm",
                  {{"X", {x}}},
                  {{"Y", 1}, {"Mean", 1}, {"Variance", 1}},
                  Axis(c.axis, 1e-3f)};
        if (with & 1) run.inputs.push_back({"Scale", {scale}});
        if (with & 2) run.inputs.push_back({"Bias", {bias}});
        auto out = RunOp(run);
        const Expected e = DirectLayerNorm(
            ToDoubles(x), c.rows, c.cols, (with & 1) ? ToDoubles(scale) : std::vector<double>{},
            (with & 2) ? ToDoubles(bias) : std::vector<double>{}, static_cast<double>(1e-3f));
        const double tol = dtype == DataType::kFloat64 ? 1e-12 : 2e-5;
        EXPECT_EQ(out["Y"][0].shape(), c.shape);
        EXPECT_EQ(out["Mean"][0].shape(), (Shape{c.rows}));
        ExpectAllNear(ToDoubles(out["Y"][0]), e.y, tol, "Y");
        ExpectAllNear(ToDoubles(out["Mean"][0]), e.mean, tol, "Mean");
        ExpectAllNear(ToDoubles(out["Variance"][0]), e.var, tol, "Variance");
      }
    }
  }
}

TEST(LayerNormOpTest, GradientMatchesNumeric) {
  uint64_t seed = 100;
  for (const Case& c : kCases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " axis " + std::to_string(c.axis));
    GradientCheck("layer_norm")
        .Input("X", RandomTensor(c.shape, seed, -2, 3))
        .Input("Scale", RandomTensor({c.cols}, seed + 1, 0.5, 1.5))
        .Input("Bias", RandomTensor({c.cols}, seed + 2))
        .Output("Y")
        .Output("Mean")
        .Output("Variance")
        .Attrs(Axis(c.axis))
        .Run();
    seed += 3;
  }
  // Without Scale and Bias.
  GradientCheck("layer_norm")
      .Input("X", RandomTensor({3, 7}, 200, -2, 3))
      .Output("Y")
      .Output("Mean")
      .Output("Variance")
      .Run();
}

TEST(LayerNormOpTest, MissingOutputGradientGivesZeros) {
  auto out = RunOp({"layer_norm_grad",
                    {{"X", {RandomTensor({2, 3}, 1)}},
                     {"Scale", {RandomTensor({3}, 2)}},
                     {"Mean", {RandomTensor({2}, 3)}},
                     {"Variance", {RandomTensor({2}, 4, 0.5, 1)}}},
                    {{"X@GRAD", 1}, {"Scale@GRAD", 1}, {"Bias@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), std::vector<double>(6, 0.0));
  EXPECT_EQ(ToDoubles(out["Scale@GRAD"][0]), std::vector<double>(3, 0.0));
  EXPECT_EQ(ToDoubles(out["Bias@GRAD"][0]), std::vector<double>(3, 0.0));
}

TEST(LayerNormOpTest, GradMakerOmitsGradientsOfAbsentScaleAndBias) {
  proto::OpDesc fwd;
  fwd.set_type("layer_norm");
  SetInput(&fwd, "X", {"x"});
  SetOutput(&fwd, "Y", {"y"});
  SetOutput(&fwd, "Mean", {"m"});
  SetOutput(&fwd, "Variance", {"v"});
  SetAttr(&fwd, "begin_norm_axis", 2);
  auto grads = GetOpSchema("layer_norm").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_TRUE(OutputVars(grads[0], "Scale@GRAD").empty());
  EXPECT_TRUE(OutputVars(grads[0], "Bias@GRAD").empty());
  EXPECT_EQ(OutputVars(grads[0], "X@GRAD"), (std::vector<std::string>{"x@GRAD"}));
  ASSERT_NE(FindAttr(grads[0], "begin_norm_axis"), nullptr);
  EXPECT_EQ(AttrValue<int64_t>(*FindAttr(grads[0], "begin_norm_axis")), 2);
}

TEST(LayerNormOpTest, RejectsBadAxisAndShapesNamingTheOp) {
  try {
    RunOp({"layer_norm",
           {{"X", {RandomTensor({2, 3}, 1)}}},
           {{"Y", 1}, {"Mean", 1}, {"Variance", 1}},
           Axis(2)});
    ADD_FAILURE() << "begin_norm_axis 2 accepted for rank 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer_norm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("begin_norm_axis"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RunOp({"layer_norm",
                      {{"X", {RandomTensor({2, 3, 4}, 1)}}, {"Scale", {RandomTensor({4}, 2)}}},
                      {{"Y", 1}, {"Mean", 1}, {"Variance", 1}},
                      Axis(1)}),
               Error);
  EXPECT_NO_THROW(RunOp({"layer_norm",
                         {{"X", {RandomTensor({2, 3, 4}, 1)}}, {"Scale", {RandomTensor({12}, 2)}}},
                         {{"Y", 1}, {"Mean", 1}, {"Variance", 1}},
                         Axis(1)}));
}

}  // namespace layer_norm_op_test
}  // namespace rill::testing
