#include "rill/backward.h"

#include <map>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "runtime/desc/block_access.h"
#include "runtime/program/while_backward.h"

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

// Appends the gradient ops of the ops of one block (`forward`) to a block
// (`target`: the same block for the main program, a new grad block for the
// sub-block of an op such as parallel_do). Variables are looked up through
// the forward block's ancestors; gradients are declared in the target block.
class BackwardPass {
 public:
  BackwardPass(Program* program, int forward, int target, std::set<std::string> no_grad,
               std::set<std::string> outer_needs_grad = {})
      : program_(program),
        forward_index_(forward),
        target_index_(target),
        no_grad_(std::move(no_grad)),
        needs_grad_(std::move(outer_needs_grad)) {}

  std::vector<ParamGrad> Run(const std::string& loss) {
    const proto::VarDesc* loss_desc = Declared(loss);
    RILL_CHECK(loss_desc != nullptr, kNotFound, "loss variable \"", loss, "\" is not declared");
    const Shape loss_shape = VarShape(*loss_desc);
    bool one_element = true;
    for (int64_t d : loss_shape) one_element = one_element && d == 1;
    RILL_CHECK(
        one_element && loss_desc->dtype() != proto::INT32 && loss_desc->dtype() != proto::INT64,
        kInvalidArgument, "loss \"", loss, "\" must be a one-element float tensor, is ",
        ShapeToString(loss_shape));
    const int forward_ops = forward()->ops_size();
    MarkVariablesNeedingGrad(forward_ops);

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
    *target()->add_ops() = seed;

    AppendGradOps(forward_ops, {loss});
    std::vector<ParamGrad> pairs;
    for (const auto& var : forward()->vars()) {
      if (var.parameter() && produced_.count(GradVarName(var.name()))) {
        pairs.push_back({var.name(), GradVarName(var.name())});
      }
    }
    return pairs;
  }

  // For a sub-block: the gradients of `outputs` (outer variables the block
  // writes) are given; appends the ops that make the gradients of what needs
  // one. Returns the gradients produced of variables declared outside the
  // block (its inputs and the parameters it reads).
  std::vector<std::string> RunForOutputs(const std::vector<std::string>& output_grads) {
    const int forward_ops = forward()->ops_size();
    MarkVariablesNeedingGrad(forward_ops);
    std::vector<std::string> outputs;
    for (const auto& g : output_grads) {
      produced_.insert(g);
      outputs.push_back(ForwardName(g));
    }
    AppendGradOps(forward_ops, outputs);
    std::vector<std::string> outer;
    for (const auto& g : produced_) {
      const std::string fwd = ForwardName(g);
      if (FindLocalVarDesc(forward(), fwd) != nullptr) continue;  // the block's own
      if (std::find(output_grads.begin(), output_grads.end(), g) != output_grads.end()) continue;
      outer.push_back(g);
    }
    return outer;
  }

 private:
  proto::BlockDesc* forward() { return program_->desc().mutable_blocks(forward_index_); }
  proto::BlockDesc* target() { return program_->desc().mutable_blocks(target_index_); }
  const proto::VarDesc* Declared(const std::string& name) const {
    return FindVarDesc(program_->desc(), forward_index_, name);
  }

  bool Trainable(const proto::VarDesc& var) const {
    return var.parameter() && !var.stop_gradient() && !no_grad_.count(var.name());
  }

  // needs_grad_: parameters (of this block and its ancestors), and whatever a
  // differentiable slot computes from them.
  void MarkVariablesNeedingGrad(int forward_ops) {
    for (int b = forward_index_; b >= 0; b = program_->desc().blocks(b).parent_idx()) {
      for (const auto& var : program_->desc().blocks(b).vars()) {
        if (Trainable(var)) needs_grad_.insert(var.name());
      }
    }
    for (int i = 0; i < forward_ops; ++i) {
      const auto& op = forward()->ops(i);
      const OpSchema& schema = GetOpSchema(op.type());
      if (!AnyInputNeedsGrad(op)) continue;
      // A while's loop variables (what its body writes) are computed from
      // what needs a gradient, even where the variable the loop overwrites
      // began as data (stop_gradient).
      if (op.type() == "while") {
        for (const auto& name : Writes(op)) {
          const proto::VarDesc* desc = Declared(name);
          if (desc != nullptr && IsFloat(*desc) && !no_grad_.count(name)) {
            needs_grad_.insert(name);
          }
        }
        continue;
      }
      for (const auto& slot : op.outputs()) {
        const SlotSpec* spec = schema.FindOutput(slot.name());
        if (spec == nullptr || !spec->differentiable()) continue;
        for (const auto& name : slot.vars()) {
          const proto::VarDesc* desc = Declared(name);
          if (desc != nullptr && !desc->stop_gradient() && !no_grad_.count(name)) {
            needs_grad_.insert(name);
          }
        }
      }
    }
  }

  // Inputs of an op, with what its sub-block reads from outside for block ops.
  std::set<std::string> Reads(const proto::OpDesc& op) const {
    std::set<std::string> names;
    for (const auto& slot : op.inputs()) names.insert(slot.vars().begin(), slot.vars().end());
    for (int sub : SubBlocksOf(op)) {
      const BlockAccess access = ExternalAccess(program_->desc(), sub);
      for (const auto& name : access.reads) {
        if (Declared(name) != nullptr) names.insert(name);  // not the forward block's own
      }
    }
    return names;
  }

  // Outputs of an op, with what its sub-blocks write from outside.
  std::set<std::string> Writes(const proto::OpDesc& op) const {
    std::set<std::string> names;
    for (const auto& slot : op.outputs()) names.insert(slot.vars().begin(), slot.vars().end());
    for (int sub : SubBlocksOf(op)) {
      const BlockAccess access = ExternalAccess(program_->desc(), sub);
      for (const auto& name : access.writes) {
        if (Declared(name) != nullptr) names.insert(name);
      }
    }
    return names;
  }

  static bool IsFloat(const proto::VarDesc& var) {
    return var.dtype() == proto::FLOAT32 || var.dtype() == proto::FLOAT64;
  }

  bool AnyInputNeedsGrad(const proto::OpDesc& op) const {
    const OpSchema& schema = GetOpSchema(op.type());
    if (schema.grad_block()) {
      for (const auto& name : Reads(op)) {
        if (needs_grad_.count(name)) return true;
      }
      return false;
    }
    for (const auto& slot : op.inputs()) {
      const SlotSpec* spec = schema.FindInput(slot.name());
      if (spec == nullptr || !spec->differentiable()) continue;
      for (const auto& name : slot.vars()) {
        if (needs_grad_.count(name)) return true;
      }
    }
    return false;
  }

  std::vector<bool> OpsOnPath(const std::vector<std::string>& targets, int forward_ops) const {
    std::set<std::string> wanted(targets.begin(), targets.end());
    std::vector<bool> on_path(static_cast<size_t>(forward_ops), false);
    for (int i = forward_ops - 1; i >= 0; --i) {
      const auto& op = program_->desc().blocks(forward_index_).ops(i);
      bool writes_wanted = false;
      for (const auto& name : Writes(op)) writes_wanted |= wanted.count(name) > 0;
      if (!writes_wanted) continue;
      on_path[static_cast<size_t>(i)] = true;
      for (const auto& name : Reads(op)) wanted.insert(name);
    }
    return on_path;
  }

  void AppendGradOps(int forward_ops, const std::vector<std::string>& targets) {
    const std::vector<bool> on_path = OpsOnPath(targets, forward_ops);
    for (int i = forward_ops - 1; i >= 0; --i) {
      if (!on_path[i]) continue;
      const proto::OpDesc forward_op = forward()->ops(i);
      if (!AnyInputNeedsGrad(forward_op)) continue;
      const OpSchema& schema = GetOpSchema(forward_op.type());
      if (forward_op.type() == "while") {
        AppendWhileGrad(i);
        continue;
      }
      if (schema.grad_block()) {
        AppendGradOp(BlockGradOp(forward_op, schema));
        continue;
      }
      if (!schema.has_grad()) {
        Fail(ErrorCode::kUnimplemented, "block ", forward_index_, ", op ", i, " (",
             forward_op.type(), ") lies between a parameter and the loss but has no gradient");
      }
      for (proto::OpDesc grad : schema.grad_maker()(forward_op)) AppendGradOp(std::move(grad));
    }
  }

  // The gradient of an op that runs a sub-block: a new block (child of the
  // sub-block, so it sees the forward values) holds the gradient ops of the
  // sub-block's ops, and "<type>_grad" runs it. Its outputs: "<Slot>@GRAD" for
  // the differentiable input slots, "Params@GRAD" for the parameters the
  // sub-block reads; the names the grad block writes them under are its
  // attributes "input_grads" and "param_grads".
  proto::OpDesc BlockGradOp(const proto::OpDesc& forward_op, const OpSchema& schema) {
    const int sub = BlockAttr(forward_op, *schema.grad_block());
    proto::BlockDesc* grad_block = program_->desc().add_blocks();
    const int grad_index = program_->desc().blocks_size() - 1;
    grad_block->set_idx(grad_index);
    grad_block->set_parent_idx(sub);
    std::vector<std::string> output_grads;
    for (const auto& slot : forward_op.outputs()) {
      for (const auto& name : slot.vars()) {
        if (produced_.count(GradVarName(name))) output_grads.push_back(GradVarName(name));
      }
    }
    BackwardPass inner(program_, sub, grad_index, no_grad_, needs_grad_);
    const std::vector<std::string> outer = inner.RunForOutputs(output_grads);

    proto::OpDesc grad;
    grad.set_type(forward_op.type() + "_grad");
    *grad.mutable_inputs() = forward_op.inputs();
    std::vector<std::string> dout;
    for (const auto& g : output_grads) dout.push_back(g);
    SetInput(&grad, "Outputs@GRAD", dout);
    *grad.mutable_attrs() = forward_op.attrs();
    SetBlockAttr(&grad, *schema.grad_block(), grad_index);
    SetBlockAttr(&grad, "forward_block", sub);
    std::vector<std::string> input_grads, local_input_grads, param_grads;
    for (const auto& slot : schema.inputs()) {
      if (!slot.differentiable()) continue;
      std::vector<std::string> names;
      for (const auto& name : InputVars(forward_op, slot.name)) {
        const std::string g = GradVarName(name);
        if (std::find(outer.begin(), outer.end(), g) == outer.end()) continue;
        names.push_back(g);
        local_input_grads.push_back(g);
      }
      if (!names.empty()) SetOutput(&grad, slot.name + kGradSuffix, names);
      input_grads.insert(input_grads.end(), names.begin(), names.end());
    }
    for (const auto& g : outer) {
      if (std::find(input_grads.begin(), input_grads.end(), g) != input_grads.end()) continue;
      const proto::VarDesc* desc = Declared(ForwardName(g));
      if (desc != nullptr && desc->parameter()) param_grads.push_back(g);
    }
    if (!param_grads.empty()) SetOutput(&grad, "Params@GRAD", param_grads);
    SetAttr(&grad, "input_grads", local_input_grads);
    SetAttr(&grad, "param_grads", param_grads);
    return grad;
  }

  // The gradient of while op `op_index` (while_backward.h rewrites its body
  // first): a grad block of the body's gradient ops, which while_grad runs
  // once per recorded pass, last first. The loop variables' gradients are
  // read and written in place: after while_grad, the gradients of their
  // values before the loop.
  void AppendWhileGrad(int op_index) {
    const std::vector<LoopVar> vars =
        PrepareWhileForGradient(&program_->desc(), forward_index_, op_index);
    const proto::OpDesc forward_op = forward()->ops(op_index);
    const int body = BlockAttr(forward_op, "sub_block");
    proto::BlockDesc* grad_block = program_->desc().add_blocks();
    const int grad_index = program_->desc().blocks_size() - 1;
    grad_block->set_idx(grad_index);
    grad_block->set_parent_idx(body);
    std::set<std::string> inner_needs = needs_grad_;
    std::vector<std::string> loop_vars, loop_grads, output_grads;
    for (const LoopVar& v : vars) {
      if (!needs_grad_.count(v.name)) continue;
      loop_vars.push_back(v.name);
      loop_grads.push_back(GradVarName(v.name));
      if (!v.input.empty()) inner_needs.insert(v.input);
    }
    BackwardPass inner(program_, body, grad_index, no_grad_, inner_needs);
    std::vector<std::string> grads;
    for (const auto& g : inner.RunForOutputs(loop_grads)) {
      if (needs_grad_.count(ForwardName(g))) grads.push_back(g);
    }
    std::vector<std::string> input_grads;  // the grad block's, per loop variable
    for (const LoopVar& v : vars) {
      if (!needs_grad_.count(v.name)) continue;
      const std::string g = v.input.empty() ? "" : GradVarName(v.input);
      const bool made =
          !g.empty() && FindLocalVarDesc(program_->desc().mutable_blocks(grad_index), g) != nullptr;
      input_grads.push_back(made ? g : "");
    }
    proto::OpDesc grad;
    grad.set_type("while_grad");
    const std::vector<std::string> reads = InputVars(forward_op, "X");
    if (!reads.empty()) SetInput(&grad, "X", reads);
    SetInput(&grad, "StepScopes", OutputVars(forward_op, "StepScopes"));
    if (!loop_grads.empty()) {
      SetInput(&grad, "LoopVars@GRAD", loop_grads);
      SetOutput(&grad, "LoopVars@GRAD", loop_grads);
    }
    if (!grads.empty()) SetOutput(&grad, "Grads", grads);
    SetBlockAttr(&grad, "sub_block", grad_index);
    SetBlockAttr(&grad, "forward_block", body);
    SetAttr(&grad, "loop_vars", loop_vars);
    SetAttr(&grad, "loop_var_input_grads", input_grads);
    SetAttr(&grad, "grads", grads);
    // A loop variable nothing after the loop reads: its gradient starts at zero.
    for (size_t k = 0; k < loop_grads.size(); ++k) {
      if (!produced_.insert(loop_grads[k]).second) continue;
      DeclareGrad(loop_vars[k]);
      proto::OpDesc zeros;
      zeros.set_type("fill_zeros_like");
      SetInput(&zeros, "X", {loop_vars[k]});
      SetOutput(&zeros, "Out", {loop_grads[k]});
      zeros.set_role(proto::ROLE_BACKWARD);
      *target()->add_ops() = std::move(zeros);
    }
    AppendGradOp(std::move(grad), std::set<std::string>(loop_grads.begin(), loop_grads.end()));
  }

  void DeclareGrad(const std::string& forward_name, const std::string& grad_name = "",
                   bool sparse = false) {
    const std::string name = grad_name.empty() ? GradVarName(forward_name) : grad_name;
    if (sparse) sparse_.insert(name);
    if (FindLocalVarDesc(target(), name) != nullptr) return;
    const proto::VarDesc* fwd = Declared(forward_name);
    RILL_CHECK(fwd != nullptr, kNotFound, "no declaration for \"", forward_name, "\" to derive ",
               name);
    const proto::VarDesc copy = *fwd;  // target() may be fwd's block: add_vars may move it
    proto::VarDesc* var = target()->add_vars();
    var->set_name(name);
    var->set_kind(sparse ? proto::SELECTED_ROWS : proto::DENSE_TENSOR);
    var->set_dtype(copy.dtype());
    *var->mutable_shape() = copy.shape();
  }

  // `in_place`: gradients the op reads and writes in place (while_grad's
  // loop variables), declared beforehand and never renamed.
  void AppendGradOp(proto::OpDesc grad, const std::set<std::string>& in_place = {}) {
    // Output gradients nobody produced are dropped (the kernel reads zeros).
    for (auto& slot : *grad.mutable_inputs()) {
      auto* vars = slot.mutable_vars();
      for (int k = vars->size() - 1; k >= 0; --k) {
        const std::string& v = vars->Get(k);
        if (IsGradName(v) && !produced_.count(v) && FindLocalVarDesc(target(), v) == nullptr) {
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
        writes_any = true;
        if (!IsGradName(v) || in_place.count(v)) continue;
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
    *target()->add_ops() = std::move(grad);
    for (const auto& [accumulated, renamed] : accumulate) {
      proto::OpDesc sum;
      sum.set_type("sum");
      SetInput(&sum, "X", {accumulated, renamed});
      SetOutput(&sum, "Out", {accumulated});
      sum.set_role(proto::ROLE_BACKWARD);
      *target()->add_ops() = std::move(sum);
    }
  }

  Program* program_;
  int forward_index_;
  int target_index_;
  std::set<std::string> no_grad_;
  std::set<std::string> needs_grad_;
  std::set<std::string> produced_;
  std::set<std::string> sparse_;  // gradients declared as selected rows
  int rename_counter_ = 0;
};

}  // namespace

std::vector<ParamGrad> AppendBackward(Program* program, const std::string& loss,
                                      const std::set<std::string>& no_grad) {
  return BackwardPass(program, 0, 0, no_grad).Run(loss);
}

}  // namespace rill
