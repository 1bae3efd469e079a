// Agreement cases of the optimizer ops' CUDA kernels (ops/optimizer/optimizer_cuda.cu).
// The runner binds every slot to a variable of its own, so these run the
// kernels with outputs apart from their inputs (not in place).
//
// Tolerances: the device code does the CPU kernels' IEEE operations in the
// same order, without fused multiply-adds, and widens float32 scalars and
// attributes as the CPU does (DecimalDouble), so the results should be the
// same bits; the tolerances allow a few units in the last place (float32:
// 1e-6 relative, float64: 1e-13) in case a compiler rounds differently.
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

Tensor Scalar32(float value) { return testing::MakeTensor<float>({1}, {value}); }
Tensor Scalar64(double value) { return testing::MakeTensor<double>({1}, {value}); }

constexpr double kAtol32 = 1e-7, kRtol32 = 1e-6;
constexpr double kAtol64 = 1e-14, kRtol64 = 1e-13;

}  // namespace

std::vector<Case> OptimizerCases() {
  using testing::RandomTensor;
  const Shape shape = {37, 129};
  const Tensor p32 = RandomTensor(shape, 11, -1, 1, DataType::kFloat32);
  const Tensor g32 = RandomTensor(shape, 12, -1, 1, DataType::kFloat32);
  const Tensor v32 = RandomTensor(shape, 13, -1, 1, DataType::kFloat32);
  const Tensor m2_32 = RandomTensor(shape, 14, 0, 1, DataType::kFloat32);  // second moment >= 0
  const Tensor p64 = RandomTensor({1000}, 21);
  const Tensor g64 = RandomTensor({1000}, 22);
  const Tensor v64 = RandomTensor({1000}, 23);
  const Tensor m2_64 = RandomTensor({1000}, 24, 0, 1);
  // More elements than one launch's grid holds threads (4096 blocks of 256):
  // the grid-stride loops go round.
  const Tensor big_p = RandomTensor({1100, 1000}, 31, -1, 1, DataType::kFloat32);
  const Tensor big_g = RandomTensor({1100, 1000}, 32, -1, 1, DataType::kFloat32);
  const Tensor big_m1 = RandomTensor({1100, 1000}, 33, -1, 1, DataType::kFloat32);
  const Tensor big_m2 = RandomTensor({1100, 1000}, 34, 0, 1, DataType::kFloat32);

  const std::vector<std::string> adam_outputs = {"ParamOut", "Moment1Out", "Moment2Out",
                                                 "Beta1PowOut", "Beta2PowOut"};
  return {
      // sgd
      {"sgd",
       {{"Param", p32}, {"Grad", g32}, {"LearningRate", Scalar32(0.01f)}},
       {"ParamOut"},
       kAtol32,
       kRtol32},
      {"sgd",
       {{"Param", big_p}, {"Grad", big_g}, {"LearningRate", Scalar32(0.3f)}},
       {"ParamOut"},
       kAtol32,
       kRtol32},
      // float64 Param, float32 LearningRate: 0.1f is read as the double 0.1.
      {"sgd",
       {{"Param", p64}, {"Grad", g64}, {"LearningRate", Scalar32(0.1f)}},
       {"ParamOut"},
       kAtol64,
       kRtol64},
      {"sgd",
       {{"Param", p64}, {"Grad", g64}, {"LearningRate", Scalar64(0.0123)}},
       {"ParamOut"},
       kAtol64,
       kRtol64},
      // momentum: defaults (mu 0.9, no Nesterov), then Nesterov and another mu.
      {"momentum",
       {{"Param", p32}, {"Grad", g32}, {"Velocity", v32}, {"LearningRate", Scalar32(0.01f)}},
       {"ParamOut", "VelocityOut"},
       kAtol32,
       kRtol32},
      {"momentum",
       {{"Param", p32}, {"Grad", g32}, {"Velocity", v32}, {"LearningRate", Scalar64(0.05)}},
       {"ParamOut", "VelocityOut"},
       kAtol32,
       kRtol32,
       {{"mu", FloatAttr("mu", 0.95f)}, {"use_nesterov", BoolAttr("use_nesterov", true)}}},
      {"momentum",
       {{"Param", p64}, {"Grad", g64}, {"Velocity", v64}, {"LearningRate", Scalar32(0.001f)}},
       {"ParamOut", "VelocityOut"},
       kAtol64,
       kRtol64},
      {"momentum",
       {{"Param", p64}, {"Grad", g64}, {"Velocity", v64}, {"LearningRate", Scalar64(0.02)}},
       {"ParamOut", "VelocityOut"},
       kAtol64,
       kRtol64,
       {{"mu", FloatAttr("mu", 0.8f)}, {"use_nesterov", BoolAttr("use_nesterov", true)}}},
      // adam: defaults at step 3 (float32 powers), then other betas and
      // epsilon with float64 powers and LearningRate, then mixed types.
      {"adam",
       {{"Param", p32},
        {"Grad", g32},
        {"LearningRate", Scalar32(0.001f)},
        {"Moment1", v32},
        {"Moment2", m2_32},
        {"Beta1Pow", Scalar32(0.729f)},
        {"Beta2Pow", Scalar32(0.997003f)}},
       adam_outputs,
       kAtol32,
       kRtol32},
      {"adam",
       {{"Param", big_p},
        {"Grad", big_g},
        {"LearningRate", Scalar32(0.01f)},
        {"Moment1", big_m1},
        {"Moment2", big_m2},
        {"Beta1Pow", Scalar32(0.9f)},
        {"Beta2Pow", Scalar32(0.999f)}},
       adam_outputs,
       kAtol32,
       kRtol32},
      {"adam",
       {{"Param", p64},
        {"Grad", g64},
        {"LearningRate", Scalar64(0.002)},
        {"Moment1", v64},
        {"Moment2", m2_64},
        {"Beta1Pow", Scalar64(0.8 * 0.8)},
        {"Beta2Pow", Scalar64(0.99 * 0.99)}},
       adam_outputs,
       kAtol64,
       kRtol64,
       {{"beta1", FloatAttr("beta1", 0.8f)},
        {"beta2", FloatAttr("beta2", 0.99f)},
        {"epsilon", FloatAttr("epsilon", 1e-6f)}}},
      {"adam",
       {{"Param", p64},
        {"Grad", g64},
        {"LearningRate", Scalar32(0.001f)},
        {"Moment1", v64},
        {"Moment2", m2_64},
        {"Beta1Pow", Scalar32(0.9f)},
        {"Beta2Pow", Scalar64(0.999)}},
       adam_outputs,
       kAtol64,
       kRtol64},
      // adamw: PyTorch's default decay on float32, a large one on float64
      // with other betas (the decay's factor is one more rounded product).
      {"adamw",
       {{"Param", big_p},
        {"Grad", big_g},
        {"LearningRate", Scalar32(0.01f)},
        {"Moment1", big_m1},
        {"Moment2", big_m2},
        {"Beta1Pow", Scalar32(0.9f)},
        {"Beta2Pow", Scalar32(0.999f)}},
       adam_outputs,
       kAtol32,
       kRtol32},
      {"adamw",
       {{"Param", p64},
        {"Grad", g64},
        {"LearningRate", Scalar64(0.002)},
        {"Moment1", v64},
        {"Moment2", m2_64},
        {"Beta1Pow", Scalar64(0.8 * 0.8)},
        {"Beta2Pow", Scalar64(0.99 * 0.99)}},
       adam_outputs,
       kAtol64,
       kRtol64,
       {{"beta1", FloatAttr("beta1", 0.8f)},
        {"beta2", FloatAttr("beta2", 0.99f)},
        {"weight_decay", FloatAttr("weight_decay", 5.0f)}}},
      // warmup_cosine_decay: in the warm-up, on the cosine, past its end;
      // float32 and float64 rates (the device's cos may differ from the
      // host's in the last place).
      {"warmup_cosine_decay",
       {{"Step", Scalar32(2)}, {"BaseRate", Scalar32(0.1f)}},
       {"Out"},
       kAtol32,
       kRtol32,
       {{"warmup_steps", IntAttr("warmup_steps", 5)}, {"decay_steps", IntAttr("decay_steps", 10)}}},
      {"warmup_cosine_decay",
       {{"Step", Scalar32(9)}, {"BaseRate", Scalar32(0.1f)}},
       {"Out"},
       kAtol32,
       kRtol32,
       {{"warmup_steps", IntAttr("warmup_steps", 5)},
        {"decay_steps", IntAttr("decay_steps", 10)},
        {"min_ratio", FloatAttr("min_ratio", 0.05f)}}},
      {"warmup_cosine_decay",
       {{"Step", Scalar64(7)}, {"BaseRate", Scalar64(0.003)}},
       {"Out"},
       kAtol64,
       kRtol64,
       {{"decay_steps", IntAttr("decay_steps", 12)}}},
      {"warmup_cosine_decay",
       {{"Step", Scalar32(40)}, {"BaseRate", Scalar64(0.5)}},
       {"Out"},
       kAtol64,
       kRtol64,
       {{"warmup_steps", IntAttr("warmup_steps", 2)},
        {"decay_steps", IntAttr("decay_steps", 3)},
        {"min_ratio", FloatAttr("min_ratio", 0.25f)}}},
  };
}

}  // namespace rill
