// Test helpers for ops: build tensors, run one op through the reference
// executor, and check an op's gradient ops against central differences in
// float64.
//
//   GradientCheck check("mul");
//   check.Input("X", RandomTensor({3, 4}, 1)).Input("Y", RandomTensor({4, 5}, 2)).Output("Out");
//   check.Run();   // EXPECTs every element of X@GRAD and Y@GRAD
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rill/op_desc.h"
#include "rill/proto/program.pb.h"
#include "rill/scope.h"
#include "rill/selected_rows.h"
#include "rill/tensor.h"

namespace rill::testing {

// Uniform values in [low, high), deterministic for a seed.
Tensor RandomTensor(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0,
                    DataType dtype = DataType::kFloat64);
template <class T>
Tensor MakeTensor(const Shape& shape, const std::vector<T>& values) {
  Tensor t(DataTypeOf<T>(), shape);
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) p[i] = values[i];
  return t;
}
// Values of a tensor as doubles.
std::vector<double> ToDoubles(const Tensor& t);

using AttrSetter = std::function<void(proto::OpDesc*)>;

// One op, its inputs by slot, its output slots (with counts): runs it through
// the reference executor (validation and shape inference included) and
// returns the outputs by slot.
struct OpRun {
  std::string type;
  std::vector<std::pair<std::string, std::vector<Tensor>>> inputs;
  std::vector<std::pair<std::string, int>> outputs;
  AttrSetter attrs;
};
std::map<std::string, std::vector<Tensor>> RunOp(const OpRun& run);

// Runs `op` through the reference executor (validation and shape inference
// included) on variables that already hold values in `scope`, selected rows
// among them (which RunOp cannot feed). Each variable the op names is declared
// from what it holds: selected rows as kind SELECTED_ROWS with the dense shape
// they stand for; outputs that hold nothing yet from shape inference, as kind
// `new_output_kind`.
void RunOpOnScope(const proto::OpDesc& op, Scope* scope,
                  proto::VarKind new_output_kind = proto::DENSE_TENSOR);
// Selected rows of `height` holding `value`'s rows at `rows`.
SelectedRows MakeSelectedRows(const std::vector<int64_t>& rows, int64_t height, Tensor value);

class GradientCheck {
 public:
  explicit GradientCheck(std::string op_type) : run_{std::move(op_type), {}, {}, {}} {}

  GradientCheck& Input(const std::string& slot, Tensor value);
  GradientCheck& Inputs(const std::string& slot, std::vector<Tensor> values);
  GradientCheck& Output(const std::string& slot, int count = 1);
  GradientCheck& Attrs(AttrSetter setter);
  // Only check these input slots (default: every float64 input of a differentiable slot).
  GradientCheck& CheckOnly(std::vector<std::string> slots);
  // Finite-difference step and tolerance: |analytic - numeric| <= atol + rtol*|numeric|.
  GradientCheck& Tolerance(double atol, double rtol);
  GradientCheck& Delta(double delta);

  // Runs forward and grad ops and EXPECTs every gradient element to match.
  void Run();

 private:
  proto::ProgramDesc BuildProgram(bool with_grad) const;
  double Loss(const std::vector<std::pair<std::string, std::vector<Tensor>>>& inputs) const;

  OpRun run_;
  std::vector<std::string> check_only_;
  double atol_ = 1e-6;
  double rtol_ = 1e-5;
  double delta_ = 1e-6;
  // Random weights w per output: loss = sum(w * out), so each output element gets its own gradient.
  mutable std::map<std::string, Tensor> weights_;
};

}  // namespace rill::testing
