// Tests of momentum: repeated steps against a reference loop, plain and
// Nesterov, in-place updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <type_traits>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace momentum_op_test {

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

Tensor Scalar(DataType dtype, double value) {
  Tensor t(dtype, {1});
  t.Fill(value);
  return t;
}

template <class T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Equal up to 4 units in the last place.
template <class T>
void ExpectUlpEq(T got, T want, const std::string& where) {
  if constexpr (std::is_same_v<T, float>) {
    EXPECT_FLOAT_EQ(got, want) << where;
  } else {
    EXPECT_DOUBLE_EQ(got, want) << where;
  }
}

const SlotList kInputs = {{"Param", "p"}, {"Grad", "g"}, {"Velocity", "v"}, {"LearningRate", "lr"}};
const SlotList kOutputs = {{"ParamOut", "p"}, {"VelocityOut", "v"}};

// Six steps on a [5, 7] parameter (mu 0.8, lr 0.05), each with a new
// gradient, against the update rule computed here in T.
template <class T>
void CheckSteps(bool nesterov) {
  const DataType dtype = DataTypeOf<T>();
  const Shape shape{5, 7};
  auto program = OneOpProgram("momentum",
                              {{"p", shape, dtype},
                               {"g", shape, dtype},
                               {"v", shape, dtype},
                               {"lr", {1}, DataType::kFloat32}},
                              kInputs, kOutputs, [nesterov](proto::OpDesc* op) {
                                SetAttr(op, "mu", 0.8f);
                                SetAttr(op, "use_nesterov", nesterov);
                              });
  Scope scope;
  scope.Var("p")->mutable_tensor()->CopyFrom(RandomTensor(shape, 1, -1, 1, dtype));
  Tensor zeros(dtype, shape);
  zeros.Fill(0);
  scope.Var("v")->mutable_tensor()->CopyFrom(zeros);
  scope.Var("lr")->mutable_tensor()->CopyFrom(Scalar(DataType::kFloat32, 0.05));
  // 0.8f and 0.05f stand for the decimals 0.8 and 0.05.
  const T mu = static_cast<T>(0.8);
  const T lr = static_cast<T>(0.05);
  std::vector<T> p = Values<T>(scope.GetTensor("p"));
  std::vector<T> v(p.size(), 0);
  const void* p_buffer = scope.GetTensor("p").raw_data();
  const void* v_buffer = scope.GetTensor("v").raw_data();
  Executor exe;
  auto step = exe.Prepare(program, &scope);
  for (int s = 0; s < 6; ++s) {
    const Tensor grad = RandomTensor(shape, 10 + s, -2, 2, dtype);
    exe.Run(*step, {{"g", grad}});
    const T* g = grad.data<T>();
    for (size_t i = 0; i < p.size(); ++i) {
      v[i] = mu * v[i] + g[i];
      p[i] -= nesterov ? lr * (g[i] + mu * v[i]) : lr * v[i];
    }
    const auto got_p = Values<T>(scope.GetTensor("p"));
    const auto got_v = Values<T>(scope.GetTensor("v"));
    for (size_t i = 0; i < p.size(); ++i) {
      ExpectUlpEq(got_p[i], p[i], StrCat("param, step ", s, " element ", i));
      ExpectUlpEq(got_v[i], v[i], StrCat("velocity, step ", s, " element ", i));
    }
    EXPECT_EQ(scope.GetTensor("p").raw_data(), p_buffer) << "Param was not updated in place";
    EXPECT_EQ(scope.GetTensor("v").raw_data(), v_buffer) << "Velocity was not updated in place";
  }
}

TEST(MomentumOpTest, Float32Steps) { CheckSteps<float>(false); }
TEST(MomentumOpTest, Float64Steps) { CheckSteps<double>(false); }
TEST(MomentumOpTest, Float32NesterovSteps) { CheckSteps<float>(true); }
TEST(MomentumOpTest, Float64NesterovSteps) { CheckSteps<double>(true); }

TEST(MomentumOpTest, HandComputedStep) {
  // v = 0.5 * [2, -2] + [1, 1] = [2, 0]; p = [1, 1] - 0.1 * v = [0.8, 1].
  // Nesterov: p = [1, 1] - 0.1 * ([1, 1] + 0.5 * [2, 0]) = [0.8, 0.9].
  for (bool nesterov : {false, true}) {
    const DataType d = DataType::kFloat64;
    auto program =
        OneOpProgram("momentum", {{"p", {2}, d}, {"g", {2}, d}, {"v", {2}, d}, {"lr", {1}, d}},
                     kInputs, kOutputs, [nesterov](proto::OpDesc* op) {
                       SetAttr(op, "mu", 0.5f);
                       SetAttr(op, "use_nesterov", nesterov);
                     });
    Scope scope;
    auto out = Executor().Run(program, &scope,
                              {{"p", MakeTensor<double>({2}, {1, 1})},
                               {"g", MakeTensor<double>({2}, {1, 1})},
                               {"v", MakeTensor<double>({2}, {2, -2})},
                               {"lr", Scalar(d, 0.1)}},
                              {"p", "v"});
    EXPECT_EQ(ToDoubles(out[1]), (std::vector<double>{2, 0}));
    const std::vector<double> want =
        nesterov ? std::vector<double>{0.8, 0.9} : std::vector<double>{0.8, 1};
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(ToDoubles(out[0])[i], want[i], 1e-15) << nesterov;
  }
}

// Momentum::Minimize end to end: loss = max(w), a one-hot gradient at the argmax.
TEST(MomentumOpTest, OptimizerMinimizesThroughTheProgram) {
  Program main, startup;
  Builder b(&main, &startup, 4);
  Var w = b.Parameter("w", {1, 6}, Initializer::Uniform(-1, 1));
  auto top = b.AppendOp("top_k", {{"X", {w}}}, {{"Out", 1}, {"Indices", 1}});
  Momentum momentum(0.125f, 0.5f);
  momentum.Minimize(b, top[0]);
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  std::vector<float> p = Values<float>(scope.GetTensor("w"));
  std::vector<float> v(p.size(), 0);
  auto step = exe.Prepare(main.desc(), &scope);
  for (int s = 0; s < 8; ++s) {
    const auto argmax = std::max_element(p.begin(), p.end()) - p.begin();
    exe.Run(*step);
    for (size_t i = 0; i < p.size(); ++i) {
      const float g = static_cast<long>(i) == argmax ? 1.0f : 0.0f;
      v[i] = 0.5f * v[i] + g;
      p[i] -= 0.125f * v[i];
    }
    EXPECT_EQ(Values<float>(scope.GetTensor("w")), p) << "step " << s;
  }
}

TEST(MomentumOpTest, RejectsMismatchedInputs) {
  const DataType f = DataType::kFloat32;
  auto prepare = [](const proto::ProgramDesc& program) {
    Scope scope;
    Executor().Prepare(program, &scope);
  };
  // Velocity of another shape, or another type.
  EXPECT_THROW(prepare(OneOpProgram("momentum",
                                    {{"p", {3}, f}, {"g", {3}, f}, {"v", {4}, f}, {"lr", {1}, f}},
                                    kInputs, kOutputs)),
               Error);
  EXPECT_THROW(prepare(OneOpProgram(
                   "momentum",
                   {{"p", {3}, f}, {"g", {3}, f}, {"v", {3}, DataType::kFloat64}, {"lr", {1}, f}},
                   kInputs, kOutputs)),
               Error);
  // Grad of another shape; a learning rate that is not one element.
  EXPECT_THROW(prepare(OneOpProgram(
                   "momentum", {{"p", {3}, f}, {"g", {1, 3}, f}, {"v", {3}, f}, {"lr", {1}, f}},
                   kInputs, kOutputs)),
               Error);
  EXPECT_THROW(prepare(OneOpProgram("momentum",
                                    {{"p", {3}, f}, {"g", {3}, f}, {"v", {3}, f}, {"lr", {3}, f}},
                                    kInputs, kOutputs)),
               Error);
  // Velocity missing.
  EXPECT_THROW(prepare(OneOpProgram("momentum", {{"p", {3}, f}, {"g", {3}, f}, {"lr", {1}, f}},
                                    {{"Param", "p"}, {"Grad", "g"}, {"LearningRate", "lr"}},
                                    {{"ParamOut", "p"}})),
               Error);
}

}  // namespace momentum_op_test
}  // namespace rill::testing
