// Tests of sgd: repeated steps against a reference loop, in-place updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <type_traits>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

struct VarSpec {
  std::string name;
  Shape shape;
  DataType dtype;
};
using SlotList = std::vector<std::pair<std::string, std::string>>;  // (slot, variable)

proto::ProgramDesc OneOpProgram(const std::string& type, const std::vector<VarSpec>& vars,
                                const SlotList& inputs, const SlotList& outputs) {
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
  return program;
}

Tensor Scalar(DataType dtype, double value) {
  Tensor t(dtype, {1});
  t.Fill(value);
  return t;
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

template <class T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Five steps of sgd on a [3, 4] parameter with learning rate 0.1, each with a
// new gradient, against `param -= lr * grad` computed here in T.
template <class T>
void CheckSteps(DataType lr_type, T lr_in_t) {
  const DataType dtype = DataTypeOf<T>();
  const Shape shape{3, 4};
  auto program =
      OneOpProgram("sgd", {{"p", shape, dtype}, {"g", shape, dtype}, {"lr", {1}, lr_type}},
                   {{"Param", "p"}, {"Grad", "g"}, {"LearningRate", "lr"}}, {{"ParamOut", "p"}});
  Scope scope;
  scope.Var("p")->mutable_tensor()->CopyFrom(RandomTensor(shape, 1, -1, 1, dtype));
  scope.Var("lr")->mutable_tensor()->CopyFrom(Scalar(lr_type, 0.1));
  std::vector<T> want = Values<T>(scope.GetTensor("p"));
  const void* buffer = scope.GetTensor("p").raw_data();
  Executor exe;
  auto step = exe.Prepare(program, &scope);
  for (int s = 0; s < 5; ++s) {
    const Tensor grad = RandomTensor(shape, 10 + s, -2, 2, dtype);
    exe.Run(*step, {{"g", grad}});
    for (size_t i = 0; i < want.size(); ++i) want[i] -= lr_in_t * grad.data<T>()[i];
    const std::vector<T> got = Values<T>(scope.GetTensor("p"));
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectUlpEq(got[i], want[i], StrCat("step ", s, " element ", i));
    }
    EXPECT_EQ(scope.GetTensor("p").raw_data(), buffer) << "Param was not updated in place";
  }
}

TEST(SgdOpTest, Float32StepsInPlace) { CheckSteps<float>(DataType::kFloat32, 0.1f); }

TEST(SgdOpTest, Float64StepsInPlace) { CheckSteps<double>(DataType::kFloat64, 0.1); }

// The optimizer's learning rate is a float32 variable; a float64 parameter
// reads 0.1f as the decimal 0.1, not as 0.100000001490116.
TEST(SgdOpTest, Float64ParamWithFloat32LearningRate) {
  CheckSteps<double>(DataType::kFloat32, 0.1);
}

TEST(SgdOpTest, WritesADifferentOutputWithoutTouchingParam) {
  const Shape shape{5};
  auto program =
      OneOpProgram("sgd",
                   {{"p", shape, DataType::kFloat64},
                    {"g", shape, DataType::kFloat64},
                    {"lr", {1}, DataType::kFloat64},
                    {"q", shape, DataType::kFloat64}},
                   {{"Param", "p"}, {"Grad", "g"}, {"LearningRate", "lr"}}, {{"ParamOut", "q"}});
  Scope scope;
  auto out = Executor().Run(program, &scope,
                            {{"p", MakeTensor<double>(shape, {1, 2, 3, 4, 5})},
                             {"g", MakeTensor<double>(shape, {1, -1, 2, 0, 4})},
                             {"lr", Scalar(DataType::kFloat64, 0.5)}},
                            {"p", "q"});
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(ToDoubles(out[1]), (std::vector<double>{0.5, 2.5, 2, 4, 3}));
}

// SGD::Minimize end to end: loss = max(w), so the gradient is one-hot at the argmax.
TEST(SgdOpTest, OptimizerMinimizesThroughTheProgram) {
  Program main, startup;
  Builder b(&main, &startup, 9);
  Var w = b.Parameter("w", {1, 8}, Initializer::Uniform(-1, 1));
  auto top = b.AppendOp("top_k", {{"X", {w}}}, {{"Out", 1}, {"Indices", 1}});
  SGD sgd(0.25f);
  sgd.Minimize(b, top[0]);
  Scope scope;
  Executor exe;
  exe.Run(startup.desc(), &scope);
  std::vector<float> want = Values<float>(scope.GetTensor("w"));
  const void* buffer = scope.GetTensor("w").raw_data();
  auto step = exe.Prepare(main.desc(), &scope);
  for (int s = 0; s < 6; ++s) {
    exe.Run(*step);
    *std::max_element(want.begin(), want.end()) -= 0.25f;
    EXPECT_EQ(Values<float>(scope.GetTensor("w")), want) << "step " << s;
  }
  EXPECT_EQ(scope.GetTensor("w").raw_data(), buffer);
}

TEST(SgdOpTest, RejectsMismatchedInputs) {
  const DataType f = DataType::kFloat32;
  auto prepare = [](const proto::ProgramDesc& program) {
    Scope scope;
    Executor().Prepare(program, &scope);
  };
  const SlotList inputs = {{"Param", "p"}, {"Grad", "g"}, {"LearningRate", "lr"}};
  const SlotList outputs = {{"ParamOut", "p"}};
  // Grad of another shape.
  EXPECT_THROW(prepare(OneOpProgram("sgd", {{"p", {3, 4}, f}, {"g", {4, 3}, f}, {"lr", {1}, f}},
                                    inputs, outputs)),
               Error);
  // Grad of another type.
  EXPECT_THROW(
      prepare(OneOpProgram("sgd", {{"p", {3}, f}, {"g", {3}, DataType::kFloat64}, {"lr", {1}, f}},
                           inputs, outputs)),
      Error);
  // A learning rate of two elements, or an integer one.
  EXPECT_THROW(
      prepare(OneOpProgram("sgd", {{"p", {3}, f}, {"g", {3}, f}, {"lr", {2}, f}}, inputs, outputs)),
      Error);
  EXPECT_THROW(
      prepare(OneOpProgram("sgd", {{"p", {3}, f}, {"g", {3}, f}, {"lr", {1}, DataType::kInt64}},
                           inputs, outputs)),
      Error);
  // An integer parameter.
  const DataType i = DataType::kInt32;
  EXPECT_THROW(
      prepare(OneOpProgram("sgd", {{"p", {3}, i}, {"g", {3}, i}, {"lr", {1}, f}}, inputs, outputs)),
      Error);
  // A gradient whose run-time shape differs from Param's.
  Scope scope;
  auto program =
      OneOpProgram("sgd", {{"p", {-1}, f}, {"g", {-1}, f}, {"lr", {1}, f}}, inputs, outputs);
  EXPECT_THROW(Executor().Run(program, &scope,
                              {{"p", Tensor(f, {3})}, {"g", Tensor(f, {4})}, {"lr", Scalar(f, 1)}}),
               Error);
}

}  // namespace
}  // namespace rill::testing
