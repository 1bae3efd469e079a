// Tests of adam and adamw: repeated steps against a float64 reference of
// PyTorch's bias-corrected update (torch.optim.Adam, torch.optim.AdamW),
// in-place updates of every state tensor, adamw with weight_decay 0 against
// adam bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace adam_op_test {

struct VarSpec {
  std::string name;
  Shape shape;
  DataType dtype;
};
using SlotList = std::vector<std::pair<std::string, std::string>>;  // (slot, variable)

proto::ProgramDesc OneOpProgram(const std::string& type, const std::vector<VarSpec>& vars,
                                const SlotList& inputs, const SlotList& outputs,
                                const AttrSetter& attrs = {}) {
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  for (const auto& v : vars) {
    auto* var = block->add_vars();
    var->set_name(v.name);
    var->set_kind(proto::DENSE_TENSOR);
    var->set_dtype(ToProto(v.dtype));
    for (auto d : v.shape) var->add_shape(d);
  }
  auto* op = block->add_ops();
  op->set_type(type);
  for (const auto& [slot, var] : inputs) SetInput(op, slot, {var});
  for (const auto& [slot, var] : outputs) SetOutput(op, slot, {var});
  if (attrs) attrs(op);
  return program;
}

Tensor Filled(DataType dtype, const Shape& shape, double value) {
  Tensor t(dtype, shape);
  t.Fill(value);
  return t;
}

const SlotList kInputs = {{"Param", "p"},     {"Grad", "g"},     {"LearningRate", "lr"},
                          {"Moment1", "m1"},  {"Moment2", "m2"}, {"Beta1Pow", "b1p"},
                          {"Beta2Pow", "b2p"}};
const SlotList kOutputs = {{"ParamOut", "p"},
                           {"Moment1Out", "m1"},
                           {"Moment2Out", "m2"},
                           {"Beta1PowOut", "b1p"},
                           {"Beta2PowOut", "b2p"}};

std::vector<VarSpec> AdamVars(const Shape& shape, DataType dtype) {
  return {{"p", shape, dtype},  {"g", shape, dtype},  {"lr", {1}, DataType::kFloat32},
          {"m1", shape, dtype}, {"m2", shape, dtype}, {"b1p", {1}, dtype},
          {"b2p", {1}, dtype}};
}

// torch.optim.Adam's update, in float64 with exact powers beta^t; with a
// weight_decay, torch.optim.AdamW's (the parameter scaled by 1 - lr * wd
// before Adam's step).
struct ReferenceAdam {
  double lr, beta1, beta2, eps;
  std::vector<double> p, m, v;
  int t = 0;
  double weight_decay = 0;

  void Step(const std::vector<double>& g) {
    ++t;
    const double bc1 = 1 - std::pow(beta1, t);
    const double bc2 = 1 - std::pow(beta2, t);
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lr * weight_decay;
      m[i] = beta1 * m[i] + (1 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
      p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
    }
  }
};

// Steps of adam (adamw when weight_decay > 0) on a `shape` parameter with
// fresh gradients, against the reference; every state tensor must keep its
// buffer. The float32 attributes stand for the decimals given here (0.9f is
// read as 0.9).
void CheckSteps(DataType dtype, const Shape& shape, double beta1, double beta2, double eps,
                double tol, double weight_decay = 0) {
  const std::string type = weight_decay > 0 ? "adamw" : "adam";
  auto program =
      OneOpProgram(type, AdamVars(shape, dtype), kInputs, kOutputs, [&](proto::OpDesc* op) {
        SetAttr(op, "beta1", static_cast<float>(beta1));
        SetAttr(op, "beta2", static_cast<float>(beta2));
        SetAttr(op, "epsilon", static_cast<float>(eps));
        if (weight_decay > 0) SetAttr(op, "weight_decay", static_cast<float>(weight_decay));
      });
  Scope scope;
  scope.Var("p")->mutable_tensor()->CopyFrom(RandomTensor(shape, 1, -1, 1, dtype));
  scope.Var("m1")->mutable_tensor()->CopyFrom(Filled(dtype, shape, 0));
  scope.Var("m2")->mutable_tensor()->CopyFrom(Filled(dtype, shape, 0));
  // As the startup program does: the powers for step 1.
  scope.Var("b1p")->mutable_tensor()->CopyFrom(Filled(dtype, {1}, beta1));
  scope.Var("b2p")->mutable_tensor()->CopyFrom(Filled(dtype, {1}, beta2));
  scope.Var("lr")->mutable_tensor()->CopyFrom(Filled(DataType::kFloat32, {1}, 0.01));
  ReferenceAdam ref{0.01, beta1, beta2, eps, ToDoubles(scope.GetTensor("p")), {}, {}};
  ref.weight_decay = weight_decay;
  ref.m.assign(ref.p.size(), 0);
  ref.v.assign(ref.p.size(), 0);
  std::vector<const void*> buffers;
  for (const char* name : {"p", "m1", "m2", "b1p", "b2p"}) {
    buffers.push_back(scope.GetTensor(name).raw_data());
  }
  Executor exe;
  auto step = exe.Prepare(program, &scope);
  for (int s = 0; s < 8; ++s) {
    const Tensor grad = RandomTensor(shape, 20 + s, -1, 1, dtype);
    exe.Run(*step, {{"g", grad}});
    ref.Step(ToDoubles(grad));
    const auto p = ToDoubles(scope.GetTensor("p"));
    const auto m = ToDoubles(scope.GetTensor("m1"));
    const auto v = ToDoubles(scope.GetTensor("m2"));
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_NEAR(p[i], ref.p[i], tol) << "param, step " << s << " element " << i;
      EXPECT_NEAR(m[i], ref.m[i], tol) << "moment1, step " << s << " element " << i;
      EXPECT_NEAR(v[i], ref.v[i], tol) << "moment2, step " << s << " element " << i;
    }
    EXPECT_NEAR(scope.GetTensor("b1p").GetAsDouble(0), std::pow(beta1, s + 2), tol);
    EXPECT_NEAR(scope.GetTensor("b2p").GetAsDouble(0), std::pow(beta2, s + 2), tol);
    int k = 0;
    for (const char* name : {"p", "m1", "m2", "b1p", "b2p"}) {
      EXPECT_EQ(scope.GetTensor(name).raw_data(), buffers[k++]) << name << " moved at step " << s;
    }
  }
}

TEST(AdamOpTest, Float32StepsMatchReference) {
  CheckSteps(DataType::kFloat32, {3, 4}, 0.9, 0.999, 1e-8, 2e-6);
}

TEST(AdamOpTest, Float64StepsMatchReference) {
  CheckSteps(DataType::kFloat64, {3, 4}, 0.9, 0.999, 1e-8, 1e-13);
}

// More elements than one internal chunk, an odd count, and betas and an
// epsilon large enough to change every digit.
TEST(AdamOpTest, LongOddParameterAndOtherBetas) {
  CheckSteps(DataType::kFloat64, {3, 337}, 0.5, 0.75, 0.25, 1e-13);
  CheckSteps(DataType::kFloat32, {1001}, 0.6, 0.7, 0.3, 2e-6);
}

// From zero moments the first step moves each element by lr * g / (|g| + eps):
// by lr against the gradient's sign.
TEST(AdamOpTest, FirstStepMovesByTheLearningRate) {
  const DataType f = DataType::kFloat32;
  auto program = OneOpProgram("adam", AdamVars({4}, f), kInputs, kOutputs);
  Scope scope;
  auto out = Executor().Run(program, &scope,
                            {{"p", MakeTensor<float>({4}, {1, 1, 1, 1})},
                             {"g", MakeTensor<float>({4}, {0.5f, -2, 1e-3f, -4})},
                             {"lr", Filled(f, {1}, 0.01)},
                             {"m1", Filled(f, {4}, 0)},
                             {"m2", Filled(f, {4}, 0)},
                             {"b1p", Filled(f, {1}, 0.9)},
                             {"b2p", Filled(f, {1}, 0.999)}},
                            {"p", "b1p", "b2p"});
  const auto p = ToDoubles(out[0]);
  const std::vector<double> want = {0.99, 1.01, 0.99, 1.01};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(p[i], want[i], 1e-6) << i;
  EXPECT_NEAR(out[1].GetAsDouble(0), 0.81, 1e-7);
  EXPECT_NEAR(out[2].GetAsDouble(0), 0.998001, 1e-7);
}

// Adam::Minimize (AdamW's when weight_decay > 0) end to end: loss = max(w), a
// one-hot gradient at the argmax. The startup program sets Beta1Pow/Beta2Pow
// to beta1/beta2 in w's type.
void CheckOptimizer(DataType dtype, double tol, double weight_decay = 0) {
  Program main, startup;
  Builder b(&main, &startup, 2);
  Var w = b.Parameter("w", {1, 6}, Initializer::Uniform(-1, 1), dtype);
  auto top = b.AppendOp("top_k", {{"X", {w}}}, {{"Out", 1}, {"Indices", 1}});
  Adam adam(0.05f);
  AdamW adamw(0.05f, static_cast<float>(weight_decay));
  Optimizer& optimizer = weight_decay > 0 ? static_cast<Optimizer&>(adamw) : adam;
  optimizer.Minimize(b, top[0]);
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  ReferenceAdam ref{0.05, 0.9, 0.999, 1e-8, ToDoubles(scope.GetTensor("w")), {}, {}};
  ref.weight_decay = weight_decay;
  ref.m.assign(6, 0);
  ref.v.assign(6, 0);
  const void* buffer = scope.GetTensor("w").raw_data();
  auto step = exe.Prepare(main.desc(), &scope);
  for (int s = 0; s < 10; ++s) {
    const auto before = ToDoubles(scope.GetTensor("w"));
    std::vector<double> g(6, 0);
    g[static_cast<size_t>(std::max_element(before.begin(), before.end()) - before.begin())] = 1;
    exe.Run(*step);
    ref.Step(g);
    const auto p = ToDoubles(scope.GetTensor("w"));
    for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(p[i], ref.p[i], tol) << "step " << s;
  }
  EXPECT_EQ(scope.GetTensor("w").raw_data(), buffer);
}

TEST(AdamOpTest, OptimizerMinimizesFloat32) { CheckOptimizer(DataType::kFloat32, 2e-6); }

TEST(AdamOpTest, OptimizerMinimizesFloat64) { CheckOptimizer(DataType::kFloat64, 1e-13); }

TEST(AdamWOpTest, StepsMatchTorchAdamW) {
  CheckSteps(DataType::kFloat32, {3, 4}, 0.9, 0.999, 1e-8, 2e-6, 0.1);
  CheckSteps(DataType::kFloat64, {3, 337}, 0.9, 0.999, 1e-8, 1e-13, 0.1);
  CheckSteps(DataType::kFloat64, {5}, 0.5, 0.75, 0.25, 1e-13, 2.5);
}

TEST(AdamWOpTest, OptimizerMinimizes) {
  CheckOptimizer(DataType::kFloat32, 2e-6, 0.2);
  CheckOptimizer(DataType::kFloat64, 1e-13, 0.2);
}

// With a zero gradient the moments stay 0 and Adam's step is 0 / (0 + eps):
// only the decay moves Param, by exactly the factor 1 - lr * weight_decay.
TEST(AdamWOpTest, AZeroGradientOnlyDecays) {
  const DataType f = DataType::kFloat64;
  auto program = OneOpProgram("adamw", AdamVars({3}, f), kInputs, kOutputs,
                              [](proto::OpDesc* op) { SetAttr(op, "weight_decay", 0.5f); });
  Scope scope;
  auto out = Executor().Run(program, &scope,
                            {{"p", MakeTensor<double>({3}, {1, -2, 0.25})},
                             {"g", Filled(f, {3}, 0)},
                             {"lr", Filled(DataType::kFloat32, {1}, 0.1)},
                             {"m1", Filled(f, {3}, 0)},
                             {"m2", Filled(f, {3}, 0)},
                             {"b1p", Filled(f, {1}, 0.9)},
                             {"b2p", Filled(f, {1}, 0.999)}},
                            {"p"});
  // lr 0.1f and weight_decay 0.5f are read as the decimals 0.1 and 0.5.
  const double decay = 1 - 0.1 * 0.5;
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{decay, -2 * decay, 0.25 * decay}));
}

// adamw with weight_decay 0 is adam, bit for bit, on the vector lanes and the
// scalar tail alike (an odd count), in both types.
TEST(AdamWOpTest, NoWeightDecayIsAdamBitForBit) {
  for (const DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    const Shape shape = {2, 37};
    std::vector<Tensor> params;
    for (const std::string type : {"adam", "adamw"}) {
      auto program =
          OneOpProgram(type, AdamVars(shape, dtype), kInputs, kOutputs, [&](proto::OpDesc* op) {
            if (type == "adamw") SetAttr(op, "weight_decay", 0.0f);
          });
      Scope scope;
      scope.Var("p")->mutable_tensor()->CopyFrom(RandomTensor(shape, 3, -1, 1, dtype));
      scope.Var("m1")->mutable_tensor()->CopyFrom(Filled(dtype, shape, 0));
      scope.Var("m2")->mutable_tensor()->CopyFrom(Filled(dtype, shape, 0));
      scope.Var("b1p")->mutable_tensor()->CopyFrom(Filled(dtype, {1}, 0.9));
      scope.Var("b2p")->mutable_tensor()->CopyFrom(Filled(dtype, {1}, 0.999));
      scope.Var("lr")->mutable_tensor()->CopyFrom(Filled(DataType::kFloat32, {1}, 0.01));
      Executor exe;
      auto step = exe.Prepare(program, &scope);
      for (int s = 0; s < 5; ++s)
        exe.Run(*step, {{"g", RandomTensor(shape, 40 + s, -1, 1, dtype)}});
      params.push_back(scope.GetTensor("p"));
    }
    ASSERT_EQ(params[0].bytes(), params[1].bytes());
    EXPECT_EQ(std::memcmp(params[0].raw_data(), params[1].raw_data(), params[0].bytes()), 0)
        << DataTypeName(dtype);
  }
}

TEST(AdamOpTest, RejectsMismatchedInputs) {
  const DataType f = DataType::kFloat32;
  auto prepare = [](const proto::ProgramDesc& program) {
    Scope scope;
    Executor().Prepare(program, &scope);
  };
  auto vars = [&](const std::string& name, const Shape& shape, DataType dtype) {
    auto v = AdamVars({2, 3}, f);
    for (auto& spec : v) {
      if (spec.name == name) spec = {name, shape, dtype};
    }
    return v;
  };
  EXPECT_NO_THROW(prepare(OneOpProgram("adam", AdamVars({2, 3}, f), kInputs, kOutputs)));
  EXPECT_THROW(prepare(OneOpProgram("adam", vars("m1", {3, 2}, f), kInputs, kOutputs)), Error);
  EXPECT_THROW(
      prepare(OneOpProgram("adam", vars("m2", {2, 3}, DataType::kFloat64), kInputs, kOutputs)),
      Error);
  EXPECT_THROW(prepare(OneOpProgram("adam", vars("g", {2}, f), kInputs, kOutputs)), Error);
  EXPECT_THROW(prepare(OneOpProgram("adam", vars("b1p", {2}, f), kInputs, kOutputs)), Error);
  EXPECT_THROW(prepare(OneOpProgram("adam", vars("b2p", {1}, DataType::kInt64), kInputs, kOutputs)),
               Error);
  EXPECT_THROW(prepare(OneOpProgram("adam", AdamVars({2, 3}, f), kInputs, kOutputs,
                                    [](proto::OpDesc* op) { SetAttr(op, "beta1", 1.5f); })),
               Error);
}

}  // namespace adam_op_test
}  // namespace rill::testing
