// The optimizers given a sparse gradient (selected rows, as an embedding with
// is_sparse produces): the same update as the dense gradient on the rows it
// holds; SGD and Adam leave the other rows alone, Momentum applies it dense.
#include <gtest/gtest.h>

#include <cstring>

#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

// Runs one optimizer op on `scope`, its inputs and outputs named after the slots.
void RunOptimizer(const std::string& type, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs, Scope* scope) {
  proto::OpDesc op;
  op.set_type(type);
  for (const auto& slot : inputs) SetInput(&op, slot, {slot});
  for (const auto& slot : outputs) {
    std::string var = slot.substr(0, slot.size() - 3);  // ParamOut writes Param
    SetOutput(&op, slot, {var});
  }
  const OpSchema& schema = GetOpSchema(type);
  KernelContext ctx(op, schema, scope, Place::Cpu(), 1);
  (*schema.FindKernel(Place::Kind::kCpu))(ctx);
}

SelectedRows SparseGrad() {
  SelectedRows g;
  g.height = 4;
  g.rows = {2, 0, 2};
  g.value = MakeTensor<double>({3, 2}, {0.5, -1, 2, 3, 0.25, 0.75});
  return g;
}

// Two scopes with the same state; the first gets the sparse gradient, the second its dense form.
void Prepare(Scope* sparse, Scope* dense, const std::vector<std::string>& state) {
  for (Scope* s : {sparse, dense}) {
    s->Var("Param")->mutable_tensor()->CopyFrom(RandomTensor({4, 2}, 1));
    s->Var("LearningRate")->mutable_tensor()->CopyFrom(MakeTensor<double>({1}, {0.1}));
    uint64_t seed = 2;
    for (const auto& name : state)
      s->Var(name)->mutable_tensor()->CopyFrom(RandomTensor({4, 2}, seed++, 0.1, 1));
  }
  *sparse->Var("Grad")->mutable_selected_rows() = SparseGrad();
  dense->Var("Grad")->mutable_tensor()->CopyFrom(SparseGrad().ToDense());
}

bool RowEqual(const Tensor& a, const Tensor& b, int64_t row) {
  return std::memcmp(a.data<double>() + row * 2, b.data<double>() + row * 2, 2 * sizeof(double)) ==
         0;
}

TEST(SparseUpdateTest, SgdUpdatesOnlyTheGradientsRows) {
  Scope sparse, dense;
  Prepare(&sparse, &dense, {});
  const Tensor before = sparse.GetTensor("Param").Clone();
  for (Scope* s : {&sparse, &dense})
    RunOptimizer("sgd", {"Param", "Grad", "LearningRate"}, {"ParamOut"}, s);
  for (int64_t row = 0; row < 4; ++row) {
    EXPECT_TRUE(RowEqual(sparse.GetTensor("Param"), dense.GetTensor("Param"), row)) << row;
  }
  EXPECT_TRUE(RowEqual(sparse.GetTensor("Param"), before, 1));
  EXPECT_FALSE(RowEqual(sparse.GetTensor("Param"), before, 2));
}

TEST(SparseUpdateTest, AdamIsLazyOnRowsWithoutGradient) {
  Scope sparse, dense;
  Prepare(&sparse, &dense, {"Moment1", "Moment2"});
  for (Scope* s : {&sparse, &dense}) {
    s->Var("Beta1Pow")->mutable_tensor()->CopyFrom(MakeTensor<double>({1}, {0.9}));
    s->Var("Beta2Pow")->mutable_tensor()->CopyFrom(MakeTensor<double>({1}, {0.999}));
  }
  const Tensor param_before = sparse.GetTensor("Param").Clone();
  const Tensor moment_before = sparse.GetTensor("Moment1").Clone();
  for (Scope* s : {&sparse, &dense}) {
    RunOptimizer("adam",
                 {"Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"},
                 {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"}, s);
  }
  for (int64_t row : {0, 2}) {  // rows with a gradient: exactly the dense update
    EXPECT_TRUE(RowEqual(sparse.GetTensor("Param"), dense.GetTensor("Param"), row)) << row;
    EXPECT_TRUE(RowEqual(sparse.GetTensor("Moment1"), dense.GetTensor("Moment1"), row)) << row;
  }
  for (int64_t row : {1, 3}) {  // rows without: untouched (dense Adam would decay them)
    EXPECT_TRUE(RowEqual(sparse.GetTensor("Param"), param_before, row)) << row;
    EXPECT_TRUE(RowEqual(sparse.GetTensor("Moment1"), moment_before, row)) << row;
    EXPECT_FALSE(RowEqual(dense.GetTensor("Moment1"), moment_before, row)) << row;
  }
  EXPECT_DOUBLE_EQ(sparse.GetTensor("Beta1Pow").GetAsDouble(0), 0.9 * 0.9);
}

// AdamW would decay rows a sparse step means not to touch: it refuses.
TEST(SparseUpdateTest, AdamWRefusesASparseGradient) {
  Scope sparse, dense;
  Prepare(&sparse, &dense, {"Moment1", "Moment2"});
  sparse.Var("Beta1Pow")->mutable_tensor()->CopyFrom(MakeTensor<double>({1}, {0.9}));
  sparse.Var("Beta2Pow")->mutable_tensor()->CopyFrom(MakeTensor<double>({1}, {0.999}));
  try {
    RunOptimizer("adamw",
                 {"Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"},
                 {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"}, &sparse);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("adamw takes a dense Grad"), std::string::npos)
        << e.what();
  }
}

TEST(SparseUpdateTest, MomentumAppliesASparseGradientDense) {
  Scope sparse, dense;
  Prepare(&sparse, &dense, {"Velocity"});
  for (Scope* s : {&sparse, &dense}) {
    RunOptimizer("momentum", {"Param", "Grad", "Velocity", "LearningRate"},
                 {"ParamOut", "VelocityOut"}, s);
  }
  for (int64_t row = 0; row < 4; ++row) {
    EXPECT_TRUE(RowEqual(sparse.GetTensor("Param"), dense.GetTensor("Param"), row)) << row;
  }
}

TEST(SparseUpdateTest, AGradientOfAnotherHeightIsAnError) {
  Scope scope, unused;
  Prepare(&scope, &unused, {});
  scope.Var("Grad")->mutable_selected_rows()->height = 7;
  EXPECT_THROW(RunOptimizer("sgd", {"Param", "Grad", "LearningRate"}, {"ParamOut"}, &scope), Error);
}

}  // namespace
}  // namespace rill::testing
