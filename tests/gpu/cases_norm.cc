// Agreement cases of the normalisation ops' CUDA kernels (ops/nn/norm_cuda.cu):
// batch_norm, layer_norm and their gradients, float32 and float64, [N, C]
// and NCHW inputs, channels and rows longer than a block (the block's
// threads loop) and shorter, Y@GRAD absent.
//
// Tolerances. The GPU sums a channel or a row as a block tree; the CPU with
// eight lanes (ops/math/lane_sum.h). The sums that differ: the batch mean and
// variance (batch_norm training), a row's mean and variance and the two row
// sums of layer_norm_grad's X@GRAD, and batch_norm_grad's per-channel sums
// (Scale@GRAD, Bias@GRAD and, in training, X@GRAD). Each rounding is 2^-24
// (float32) or 2^-53 (float64) relative; sums of up to 12544 terms of
// magnitude <= 3 in two orders differ by a few hundred roundings of the
// partial sums at worst, so outputs built from them get atol/rtol 1e-4
// (float32) and 1e-10 (float64). Everything else is the CPU's arithmetic in
// its order, each operation rounded once (no FMA on either side): inference
// batch_norm, its X@GRAD, and layer_norm's Scale@GRAD and Bias@GRAD (summed
// row after row on both) are exact (atol 0, rtol 0), as are the zeros
// without Y@GRAD.
#include <vector>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using Attrs = std::vector<std::pair<std::string, proto::Attr>>;
using testing::RandomTensor;

Attrs BatchNormAttrs(bool is_test) {
  return {{"is_test", BoolAttr("is_test", is_test)},
          {"momentum", FloatAttr("momentum", 0.8f)},
          {"epsilon", FloatAttr("epsilon", 1e-4f)}};
}

// batch_norm's inputs for X of `shape` (the running variance positive).
std::map<std::string, Tensor> BatchNormInputs(const Shape& shape, uint64_t seed, DataType dtype) {
  const Shape c{shape[1]};
  return {{"X", RandomTensor(shape, seed, -2, 3, dtype)},
          {"Scale", RandomTensor(c, seed + 1, 0.5, 1.5, dtype)},
          {"Bias", RandomTensor(c, seed + 2, -1, 1, dtype)},
          {"Mean", RandomTensor(c, seed + 3, -0.5, 0.5, dtype)},
          {"Variance", RandomTensor(c, seed + 4, 0.5, 2, dtype)}};
}

// batch_norm_grad's inputs: SavedVariance is an inverse standard deviation.
std::map<std::string, Tensor> BatchNormGradInputs(const Shape& shape, uint64_t seed, DataType dtype,
                                                  bool with_dy) {
  const Shape c{shape[1]};
  std::map<std::string, Tensor> in = {{"X", RandomTensor(shape, seed, -2, 3, dtype)},
                                      {"Scale", RandomTensor(c, seed + 1, 0.5, 1.5, dtype)},
                                      {"SavedMean", RandomTensor(c, seed + 2, -0.5, 0.5, dtype)},
                                      {"SavedVariance", RandomTensor(c, seed + 3, 0.5, 2, dtype)}};
  if (with_dy) in["Y@GRAD"] = RandomTensor(shape, seed + 4, -1, 1, dtype);
  return in;
}

const std::vector<std::string> kBatchNormOutputs = {"Y", "MeanOut", "VarianceOut", "SavedMean",
                                                    "SavedVariance"};
const std::vector<std::string> kNormGrads = {"X@GRAD", "Scale@GRAD", "Bias@GRAD"};

void AddBatchNormCases(std::vector<Case>* cases) {
  constexpr DataType f32 = DataType::kFloat32, f64 = DataType::kFloat64;
  // Channels of 12544 (many block steps), 784, 49 and 1 (fewer than a block) elements.
  const std::vector<Shape> shapes = {
      {64, 16, 14, 14}, {16, 8, 7, 7}, {300, 40}, {1, 3, 7, 7}, {5, 4, 1, 1}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (DataType t : {f32, f64}) {
      const double tol = t == f32 ? 1e-4 : 1e-10;
      cases->push_back({"batch_norm", BatchNormInputs(s, seed, t), kBatchNormOutputs, tol, tol,
                        BatchNormAttrs(false)});
      cases->push_back({"batch_norm", BatchNormInputs(s, seed + 10, t), kBatchNormOutputs, 0, 0,
                        BatchNormAttrs(true)});
      cases->push_back({"batch_norm_grad", BatchNormGradInputs(s, seed + 20, t, true), kNormGrads,
                        tol, tol, BatchNormAttrs(false)});
      cases->push_back({"batch_norm_grad",
                        BatchNormGradInputs(s, seed + 30, t, true),
                        {"X@GRAD"},
                        0,
                        0,
                        BatchNormAttrs(true)});
      cases->push_back({"batch_norm_grad",
                        BatchNormGradInputs(s, seed + 30, t, true),
                        {"Scale@GRAD", "Bias@GRAD"},
                        tol,
                        tol,
                        BatchNormAttrs(true)});
      seed += 100;
    }
  }
  for (DataType t : {f32, f64}) {  // no Y@GRAD: zeros
    cases->push_back({"batch_norm_grad", BatchNormGradInputs({4, 3, 5, 5}, 7, t, false), kNormGrads,
                      0, 0, BatchNormAttrs(false)});
  }
}

void AddLayerNormCases(std::vector<Case>* cases) {
  constexpr DataType f32 = DataType::kFloat32, f64 = DataType::kFloat64;
  struct Rows {
    Shape shape;
    int64_t axis, rows, cols;
  };
  // Rows of 3000 (many block steps), 64, 28 and 5 elements.
  const std::vector<Rows> all = {{{4, 3000}, 1, 4, 3000},
                                 {{8, 28, 64}, 2, 224, 64},
                                 {{3, 28, 28}, 2, 84, 28},
                                 {{2, 3, 5}, 2, 6, 5}};
  uint64_t seed = 1000;
  for (const Rows& r : all) {
    for (DataType t : {f32, f64}) {
      const double tol = t == f32 ? 1e-4 : 1e-10;
      const Attrs attrs = {{"begin_norm_axis", IntAttr("begin_norm_axis", r.axis)},
                           {"epsilon", FloatAttr("epsilon", 1e-5f)}};
      const Tensor x = RandomTensor(r.shape, seed, -2, 3, t);
      const Tensor scale = RandomTensor({r.cols}, seed + 1, 0.5, 1.5, t);
      const Tensor bias = RandomTensor({r.cols}, seed + 2, -1, 1, t);
      const Tensor dy = RandomTensor(r.shape, seed + 3, -1, 1, t);
      const Tensor mean = RandomTensor({r.rows}, seed + 4, -0.5, 0.5, t);
      const Tensor var = RandomTensor({r.rows}, seed + 5, 0.5, 2, t);
      const std::vector<std::string> outs = {"Y", "Mean", "Variance"};
      cases->push_back(
          {"layer_norm", {{"X", x}, {"Scale", scale}, {"Bias", bias}}, outs, tol, tol, attrs});
      cases->push_back({"layer_norm", {{"X", x}}, outs, tol, tol, attrs});  // no Scale, Bias
      const std::map<std::string, Tensor> grad_in = {
          {"X", x}, {"Scale", scale}, {"Mean", mean}, {"Variance", var}, {"Y@GRAD", dy}};
      cases->push_back({"layer_norm_grad", grad_in, {"X@GRAD"}, tol, tol, attrs});
      cases->push_back({"layer_norm_grad", grad_in, {"Scale@GRAD", "Bias@GRAD"}, 0, 0, attrs});
      cases->push_back({"layer_norm_grad",
                        {{"X", x}, {"Mean", mean}, {"Variance", var}, {"Y@GRAD", dy}},
                        {"X@GRAD", "Bias@GRAD"},
                        tol,
                        tol,
                        attrs});  // no Scale
      cases->push_back({"layer_norm_grad",
                        {{"X", x}, {"Scale", scale}, {"Mean", mean}, {"Variance", var}},
                        kNormGrads,
                        0,
                        0,
                        attrs});  // no Y@GRAD: zeros
      seed += 100;
    }
  }
}

}  // namespace

std::vector<Case> NormCases() {
  std::vector<Case> cases;
  AddBatchNormCases(&cases);
  AddLayerNormCases(&cases);
  return cases;
}

}  // namespace rill
