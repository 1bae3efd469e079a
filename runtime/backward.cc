#include "runtime/backward.h"

#include <map>

#include "runtime/error.h"
#include "runtime/op_desc.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

bool IsGradName(const std::string& name) {
  const std::string suffix = kGradSuffix;
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string ForwardName(const std::string& grad) {
  return grad.substr(0, grad.size() - std::string(kGradSuffix).size());
}

class BackwardPass {
 public:
  BackwardPass(Program* program, std::set<std::string> no_grad)
      : block_(program->root()), no_grad_(std::move(no_grad)) {}

  std::vector<ParamGrad> Run(const std::string& loss) {
    const proto::VarDesc* loss_desc = FindLocalVarDesc(block_, loss);
    RILL_CHECK(loss_desc != nullptr, kNotFound, "loss variable \"", loss, "\" is not declared");
    const Shape loss_shape = VarShape(*loss_desc);
    bool one_element = true;
    for (int64_t d : loss_shape) one_element = one_element && d == 1;
    RILL_CHECK(one_element && loss_desc->dtype() != proto::INT32 &&
                   loss_desc->dtype() != proto::INT64,
               kInvalidArgument, "loss \"", loss, "\" must be a one-element float tensor, is ",
               ShapeToString(loss_shape));
    const int forward_ops = block_->ops_size();
    MarkVariablesNeedingGrad(forward_ops);
    std::vector<bool> on_path = OpsOnPathToLoss(loss, forward_ops);

    // d loss / d loss = 1.
    proto::OpDesc seed;
    seed.set_type("fill_constant");
    SetOutput(&seed, "Out", {GradVarName(loss)});
    SetAttr(&seed, "shape", loss_shape);
    SetAttr(&seed, "value", 1.0f);
    SetAttr(&seed, "dtype", std::string(DataTypeName(FromProto(loss_desc->dtype()))));
    seed.set_role(proto::ROLE_LOSS_GRAD);
    DeclareGrad(loss);
    produced_.insert(GradVarName(loss));
    *block_->add_ops() = seed;

    for (int i = forward_ops - 1; i >= 0; --i) {
      if (!on_path[i]) continue;
      const proto::OpDesc forward = block_->ops(i);
      if (!AnyInputNeedsGrad(forward)) continue;
      const OpSchema& schema = GetOpSchema(forward.type());
      if (!schema.has_grad()) {
        Fail(ErrorCode::kUnimplemented, "block 0, op ", i, " (", forward.type(),
             ") lies between a parameter and the loss but has no gradient");
      }
      for (proto::OpDesc grad : schema.grad_maker()(forward)) AppendGradOp(std::move(grad));
    }

    std::vector<ParamGrad> pairs;
    for (const auto& var : block_->vars()) {
      if (var.parameter() && produced_.count(GradVarName(var.name()))) {
        pairs.push_back({var.name(), GradVarName(var.name())});
      }
    }
    return pairs;
  }

 private:
  bool Trainable(const proto::VarDesc& var) const {
    return var.parameter() && !var.stop_gradient() && !no_grad_.count(var.name());
  }

  // needs_grad_: parameters, and whatever a differentiable slot computes from them.
  void MarkVariablesNeedingGrad(int forward_ops) {
    for (const auto& var : block_->vars()) {
      if (Trainable(var)) needs_grad_.insert(var.name());
    }
    for (int i = 0; i < forward_ops; ++i) {
      const auto& op = block_->ops(i);
      const OpSchema& schema = GetOpSchema(op.type());
      if (!AnyInputNeedsGrad(op)) continue;
      for (const auto& slot : op.outputs()) {
        const SlotSpec* spec = schema.FindOutput(slot.name());
        if (spec == nullptr || !spec->differentiable()) continue;
        for (const auto& name : slot.vars()) {
          const proto::VarDesc* desc = FindLocalVarDesc(block_, name);
          if (desc != nullptr && !desc->stop_gradient() && !no_grad_.count(name)) {
            needs_grad_.insert(name);
          }
        }
      }
    }
  }

  bool AnyInputNeedsGrad(const proto::OpDesc& op) const {
    const OpSchema& schema = GetOpSchema(op.type());
    for (const auto& slot : op.inputs()) {
      const SlotSpec* spec = schema.FindInput(slot.name());
      if (spec == nullptr || !spec->differentiable()) continue;
      for (const auto& name : slot.vars()) {
        if (needs_grad_.count(name)) return true;
      }
    }
    return false;
  }

  std::vector<bool> OpsOnPathToLoss(const std::string& loss, int forward_ops) const {
    std::set<std::string> wanted{loss};
    std::vector<bool> on_path(static_cast<size_t>(forward_ops), false);
    for (int i = forward_ops - 1; i >= 0; --i) {
      const auto& op = block_->ops(i);
      bool writes_wanted = false;
      for (const auto& slot : op.outputs()) {
        for (const auto& name : slot.vars()) writes_wanted |= wanted.count(name) > 0;
      }
      if (!writes_wanted) continue;
      on_path[static_cast<size_t>(i)] = true;
      for (const auto& slot : op.inputs()) {
        for (const auto& name : slot.vars()) wanted.insert(name);
      }
    }
    return on_path;
  }

  void DeclareGrad(const std::string& forward, const std::string& grad_name = "",
                   bool sparse = false) {
    const std::string name = grad_name.empty() ? GradVarName(forward) : grad_name;
    if (sparse) sparse_.insert(name);
    if (FindLocalVarDesc(block_, name) != nullptr) return;
    const proto::VarDesc* fwd = FindLocalVarDesc(block_, forward);
    RILL_CHECK(fwd != nullptr, kNotFound, "no declaration for \"", forward, "\" to derive ", name);
    proto::VarDesc* var = block_->add_vars();
    var->set_name(name);
    var->set_kind(sparse ? proto::SELECTED_ROWS : proto::DENSE_TENSOR);
    var->set_dtype(fwd->dtype());
    *var->mutable_shape() = fwd->shape();
  }

  void AppendGradOp(proto::OpDesc grad) {
    // Output gradients nobody produced are dropped (the kernel reads zeros).
    for (auto& slot : *grad.mutable_inputs()) {
      auto* vars = slot.mutable_vars();
      for (int k = vars->size() - 1; k >= 0; --k) {
        const std::string& v = vars->Get(k);
        if (IsGradName(v) && !produced_.count(v) && FindLocalVarDesc(block_, v) == nullptr) {
          vars->DeleteSubrange(k, 1);
        }
      }
    }
    // Input gradients: only for variables that need one; a second writer of
    // the same gradient writes a fresh name and is summed in.
    std::vector<std::pair<std::string, std::string>> accumulate;  // (grad, renamed)
    bool writes_any = false;
    const OpSchema& schema = GetOpSchema(grad.type());
    for (auto& slot : *grad.mutable_outputs()) {
      const bool sparse = schema.OutputIsSparse(grad, slot.name());
      auto* vars = slot.mutable_vars();
      for (int k = vars->size() - 1; k >= 0; --k) {
        const std::string v = vars->Get(k);
        if (!IsGradName(v)) continue;
        if (!needs_grad_.count(ForwardName(v))) vars->DeleteSubrange(k, 1);
      }
      for (int k = 0; k < vars->size(); ++k) {
        const std::string v = vars->Get(k);
        if (!IsGradName(v)) {
          writes_any = true;
          continue;
        }
        writes_any = true;
        if (!produced_.count(v)) {
          produced_.insert(v);
          DeclareGrad(ForwardName(v), "", sparse);
          continue;
        }
        RILL_CHECK(!sparse && !sparse_.count(v), kUnimplemented, "the sparse gradient \"", v,
                   "\" has two writers (the table is looked up twice); adding selected rows "
                   "is not supported, look it up once or drop is_sparse");
        const std::string renamed = v + "@RENAME@" + std::to_string(rename_counter_++);
        DeclareGrad(ForwardName(v), renamed);
        *vars->Mutable(k) = renamed;
        accumulate.push_back({v, renamed});
      }
    }
    // Drop now-empty slots so validation sees only bound outputs.
    auto* outputs = grad.mutable_outputs();
    for (int k = outputs->size() - 1; k >= 0; --k) {
      if (outputs->Get(k).vars_size() == 0) outputs->DeleteSubrange(k, 1);
    }
    auto* inputs = grad.mutable_inputs();
    for (int k = inputs->size() - 1; k >= 0; --k) {
      if (inputs->Get(k).vars_size() == 0) inputs->DeleteSubrange(k, 1);
    }
    if (!writes_any || outputs->empty()) return;
    grad.set_role(proto::ROLE_BACKWARD);
    *block_->add_ops() = std::move(grad);
    for (const auto& [target, renamed] : accumulate) {
      proto::OpDesc sum;
      sum.set_type("sum");
      SetInput(&sum, "X", {target, renamed});
      SetOutput(&sum, "Out", {target});
      sum.set_role(proto::ROLE_BACKWARD);
      *block_->add_ops() = std::move(sum);
    }
  }

  proto::BlockDesc* block_;
  std::set<std::string> no_grad_;
  std::set<std::string> needs_grad_;
  std::set<std::string> produced_;
  std::set<std::string> sparse_;  // gradients declared as selected rows
  int rename_counter_ = 0;
};

}  // namespace

std::vector<ParamGrad> AppendBackward(Program* program, const std::string& loss,
                                      const std::set<std::string>& no_grad) {
  return BackwardPass(program, no_grad).Run(loss);
}

}  // namespace rill
