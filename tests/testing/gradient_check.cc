#include "tests/testing/gradient_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "rill/executor.h"
#include "rill/op_registry.h"
#include "rill/validate.h"

namespace rill::testing {

Tensor RandomTensor(const Shape& shape, uint64_t seed, double low, double high, DataType dtype) {
  Tensor t(dtype, shape);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(low, high);
  VisitDataType(dtype, [&]<class T>() {
    T* p = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(gen));
  });
  return t;
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t.GetAsDouble(i);
  return out;
}

namespace {

std::string InputVarName(const std::string& slot, int i) {
  return "in_" + slot + "_" + std::to_string(i);
}
std::string OutputVarName(const std::string& slot, int i) {
  return "out_" + slot + "_" + std::to_string(i);
}

void DeclareVar(proto::BlockDesc* block, const std::string& name, const Shape& shape,
                DataType dtype) {
  if (FindLocalVarDesc(block, name) != nullptr) return;
  auto* v = block->add_vars();
  v->set_name(name);
  v->set_kind(proto::DENSE_TENSOR);
  v->set_dtype(ToProto(dtype));
  for (auto d : shape) v->add_shape(d);
}

// The forward op of `run` in a one-block program, outputs declared from shape inference.
proto::ProgramDesc ForwardProgram(const OpRun& run, VarInfoMap* infos) {
  proto::ProgramDesc program;
  program.set_random_seed(7);
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  auto* op = block->add_ops();
  op->set_type(run.type);
  for (const auto& [slot, tensors] : run.inputs) {
    std::vector<std::string> names;
    for (size_t i = 0; i < tensors.size(); ++i) {
      names.push_back(InputVarName(slot, static_cast<int>(i)));
      DeclareVar(block, names.back(), tensors[i].shape(), tensors[i].dtype());
      (*infos)[names.back()] = VarInfo{tensors[i].shape(), tensors[i].dtype()};
    }
    SetInput(op, slot, names);
  }
  for (const auto& [slot, count] : run.outputs) {
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) names.push_back(OutputVarName(slot, i));
    SetOutput(op, slot, names);
  }
  if (run.attrs) run.attrs(op);
  InferOpShapes(*op, infos);
  for (const auto& slot : op->outputs()) {
    for (const auto& name : slot.vars()) {
      auto it = infos->find(name);
      if (it == infos->end())
        ADD_FAILURE() << run.type << ": shape inference left " << name << " unset";
      else
        DeclareVar(block, name, it->second.shape, it->second.dtype);
    }
  }
  return program;
}

FeedList Feeds(const OpRun& run) {
  FeedList feeds;
  for (const auto& [slot, tensors] : run.inputs) {
    for (size_t i = 0; i < tensors.size(); ++i)
      feeds.push_back({InputVarName(slot, static_cast<int>(i)), tensors[i]});
  }
  return feeds;
}

}  // namespace

std::map<std::string, std::vector<Tensor>> RunOp(const OpRun& run) {
  VarInfoMap infos;
  proto::ProgramDesc program = ForwardProgram(run, &infos);
  Scope scope;
  std::vector<std::string> fetches;
  for (const auto& [slot, count] : run.outputs) {
    for (int i = 0; i < count; ++i) fetches.push_back(OutputVarName(slot, i));
  }
  auto values = Executor().Run(program, &scope, Feeds(run), fetches);
  std::map<std::string, std::vector<Tensor>> out;
  size_t k = 0;
  for (const auto& [slot, count] : run.outputs) {
    for (int i = 0; i < count; ++i) out[slot].push_back(values[k++].Clone());
  }
  return out;
}

void RunOpOnScope(const proto::OpDesc& op, Scope* scope, proto::VarKind new_output_kind) {
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  *block->add_ops() = op;
  VarInfoMap infos;
  auto declare = [&](const std::string& name, proto::VarKind kind, const Shape& shape,
                     DataType dtype) {
    DeclareVar(block, name, shape, dtype);
    FindLocalVarDesc(block, name)->set_kind(kind);
    infos[name] = VarInfo{shape, dtype};
  };
  for (const auto* slots : {&op.inputs(), &op.outputs()}) {
    for (const auto& slot : *slots) {
      for (const auto& name : slot.vars()) {
        const Variable* v = scope->FindVar(name);
        if (v == nullptr || FindLocalVarDesc(block, name) != nullptr) continue;
        if (v->holds_selected_rows()) {
          const SelectedRows& rows = v->selected_rows();
          declare(name, proto::SELECTED_ROWS, rows.DenseShape(), rows.value.dtype());
        } else if (v->tensor().initialized()) {
          declare(name, proto::DENSE_TENSOR, v->tensor().shape(), v->tensor().dtype());
        }
      }
    }
  }
  InferOpShapes(op, &infos);
  for (const auto& slot : op.outputs()) {
    for (const auto& name : slot.vars()) {
      if (FindLocalVarDesc(block, name) != nullptr) continue;
      const auto it = infos.find(name);
      ASSERT_NE(it, infos.end()) << op.type() << ": shape inference left " << name << " unset";
      declare(name, new_output_kind, it->second.shape, it->second.dtype);
    }
  }
  Executor().Run(program, scope);
}

SelectedRows MakeSelectedRows(const std::vector<int64_t>& rows, int64_t height, Tensor value) {
  SelectedRows out;
  out.rows = rows;
  out.height = height;
  out.value = std::move(value);
  return out;
}

GradientCheck& GradientCheck::Input(const std::string& slot, Tensor value) {
  run_.inputs.push_back({slot, {std::move(value)}});
  return *this;
}
GradientCheck& GradientCheck::Inputs(const std::string& slot, std::vector<Tensor> values) {
  run_.inputs.push_back({slot, std::move(values)});
  return *this;
}
GradientCheck& GradientCheck::Output(const std::string& slot, int count) {
  run_.outputs.push_back({slot, count});
  return *this;
}
GradientCheck& GradientCheck::Attrs(AttrSetter setter) {
  run_.attrs = std::move(setter);
  return *this;
}
GradientCheck& GradientCheck::CheckOnly(std::vector<std::string> slots) {
  check_only_ = std::move(slots);
  return *this;
}
GradientCheck& GradientCheck::Tolerance(double atol, double rtol) {
  atol_ = atol;
  rtol_ = rtol;
  return *this;
}
GradientCheck& GradientCheck::Delta(double delta) {
  delta_ = delta;
  return *this;
}

double GradientCheck::Loss(
    const std::vector<std::pair<std::string, std::vector<Tensor>>>& inputs) const {
  OpRun run = run_;
  run.inputs = inputs;
  auto outputs = RunOp(run);
  const OpSchema& schema = GetOpSchema(run_.type);
  double loss = 0;
  for (const auto& [slot, count] : run_.outputs) {
    const SlotSpec* spec = schema.FindOutput(slot);
    if (spec == nullptr || !spec->differentiable()) continue;
    for (int i = 0; i < count; ++i) {
      const Tensor& out = outputs[slot][static_cast<size_t>(i)];
      const std::string key = OutputVarName(slot, i);
      if (!weights_.count(key)) {
        weights_[key] = RandomTensor(out.shape(), 1000 + weights_.size(), 0.5, 1.5, out.dtype());
      }
      const Tensor& w = weights_[key];
      for (int64_t k = 0; k < out.numel(); ++k) loss += w.GetAsDouble(k) * out.GetAsDouble(k);
    }
  }
  return loss;
}

void GradientCheck::Run() {
  const OpSchema& schema = GetOpSchema(run_.type);
  ASSERT_TRUE(schema.has_grad()) << run_.type << " has no gradient maker";
  Loss(run_.inputs);  // fixes the output weights

  // Analytic gradients: forward op, then its grad ops, fed the weights as output gradients.
  VarInfoMap infos;
  proto::ProgramDesc program = ForwardProgram(run_, &infos);
  auto* block = program.mutable_blocks(0);
  const proto::OpDesc forward = block->ops(0);
  std::set<std::string> available_grads;  // gradients of differentiable outputs
  FeedList feeds = Feeds(run_);
  for (const auto& [slot, count] : run_.outputs) {
    const SlotSpec* spec = schema.FindOutput(slot);
    if (spec == nullptr || !spec->differentiable()) continue;
    for (int i = 0; i < count; ++i) {
      const std::string name = GradVarName(OutputVarName(slot, i));
      const Tensor& w = weights_[OutputVarName(slot, i)];
      DeclareVar(block, name, w.shape(), w.dtype());
      available_grads.insert(name);
      feeds.push_back({name, w});
    }
  }
  std::vector<std::pair<std::string, std::string>> checked;  // (input var, grad var)
  for (const auto& [slot, tensors] : run_.inputs) {
    const SlotSpec* spec = schema.FindInput(slot);
    if (spec == nullptr || !spec->differentiable()) continue;
    if (!check_only_.empty() &&
        std::find(check_only_.begin(), check_only_.end(), slot) == check_only_.end()) {
      continue;
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].dtype() != DataType::kFloat64) continue;
      const std::string name = InputVarName(slot, static_cast<int>(i));
      DeclareVar(block, GradVarName(name), tensors[i].shape(), tensors[i].dtype());
      checked.push_back({name, GradVarName(name)});
    }
  }
  for (proto::OpDesc grad : schema.grad_maker()(forward)) {
    // Drop gradients that do not exist, as append_backward does.
    for (auto& s : *grad.mutable_inputs()) {
      auto* vars = s.mutable_vars();
      for (int k = vars->size() - 1; k >= 0; --k) {
        const std::string& v = vars->Get(k);
        bool is_grad = v.size() > 5 && v.compare(v.size() - 5, 5, kGradSuffix) == 0;
        if (is_grad && !available_grads.count(v) && FindLocalVarDesc(block, v) == nullptr) {
          vars->DeleteSubrange(k, 1);
        }
      }
    }
    for (auto& s : *grad.mutable_outputs()) {
      for (const auto& v : s.vars()) {
        if (FindLocalVarDesc(block, v) == nullptr) {
          auto it = infos.find(v.substr(0, v.size() - 5));
          if (it != infos.end()) DeclareVar(block, v, it->second.shape, it->second.dtype);
        }
      }
    }
    *block->add_ops() = grad;
  }
  std::vector<std::string> fetches;
  for (const auto& c : checked) fetches.push_back(c.second);
  Scope scope;
  std::vector<Tensor> analytic;
  try {
    analytic = Executor().Run(program, &scope, feeds, fetches);
  } catch (const std::exception& e) {
    FAIL() << run_.type << " gradient run failed: " << e.what() << "\nprogram:\n"
           << program.DebugString();
  }

  // Numeric gradients by central differences, one element at a time.
  for (size_t c = 0; c < checked.size(); ++c) {
    const std::string& name = checked[c].first;
    for (size_t s = 0; s < run_.inputs.size(); ++s) {
      for (size_t i = 0; i < run_.inputs[s].second.size(); ++i) {
        if (InputVarName(run_.inputs[s].first, static_cast<int>(i)) != name) continue;
        const Tensor& original = run_.inputs[s].second[i];
        ASSERT_EQ(analytic[c].numel(), original.numel()) << "gradient " << checked[c].second;
        for (int64_t k = 0; k < original.numel(); ++k) {
          auto inputs = run_.inputs;
          Tensor plus = original.Clone();
          plus.mutable_data<double>()[k] += delta_;
          inputs[s].second[i] = plus;
          const double up = Loss(inputs);
          Tensor minus = original.Clone();
          minus.mutable_data<double>()[k] -= delta_;
          inputs[s].second[i] = minus;
          const double down = Loss(inputs);
          const double numeric = (up - down) / (2 * delta_);
          const double got = analytic[c].GetAsDouble(k);
          EXPECT_NEAR(got, numeric, atol_ + rtol_ * std::abs(numeric))
              << run_.type << ": d loss / d " << run_.inputs[s].first << "[" << i << "] element "
              << k;
        }
      }
    }
  }
}

}  // namespace rill::testing
