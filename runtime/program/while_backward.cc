#include "runtime/program/while_backward.h"

#include <map>
#include <set>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "runtime/desc/block_access.h"

namespace rill {
namespace {

// Declares `name` in `body` like `like` (an outer variable), as a plain
// local: a data variable the loop overwrites still carries gradients.
void DeclareLike(proto::BlockDesc* body, const proto::VarDesc& like, const std::string& name) {
  if (FindLocalVarDesc(body, name) != nullptr) return;
  proto::VarDesc* var = body->add_vars();
  *var = like;
  var->set_name(name);
  var->set_persistable(false);
  var->set_parameter(false);
  var->set_stop_gradient(false);  // a loop variable needs one (backward.cc says when)
}

// The loop variables an already prepared loop names in its attributes.
std::vector<LoopVar> RecordedLoopVars(const proto::OpDesc& op) {
  const auto strings = [&](const char* name) {
    const proto::Attr* attr = FindAttr(op, name);
    return attr == nullptr ? std::vector<std::string>{}
                           : AttrValue<std::vector<std::string>>(*attr);
  };
  const std::vector<std::string> names = strings("loop_vars"), inputs = strings("loop_var_inputs");
  std::vector<LoopVar> vars;
  for (size_t k = 0; k < names.size() && k < inputs.size(); ++k) {
    vars.push_back({names[k], inputs[k]});
  }
  return vars;
}

}  // namespace

std::vector<LoopVar> PrepareWhileForGradient(proto::ProgramDesc* program, int block, int op_index) {
  proto::OpDesc* op = program->mutable_blocks(block)->mutable_ops(op_index);
  if (!OutputVars(*op, "StepScopes").empty()) return RecordedLoopVars(*op);
  const int body_index = BlockAttr(*op, "sub_block");
  proto::BlockDesc* body = program->mutable_blocks(body_index);
  std::set<std::string> local;
  for (const auto& var : body->vars()) local.insert(var.name());
  // The loop variables: what the body's ops write outside it.
  std::set<std::string> written;
  for (int i = 0; i < body->ops_size(); ++i) {
    const proto::OpDesc& inner = body->ops(i);
    if (!SubBlocksOf(inner).empty()) {
      Fail(ErrorCode::kUnimplemented, "block ", body_index, ", op ", i, " (", inner.type(),
           "): a while loop whose body runs blocks of its own has no gradient");
    }
    for (const auto& slot : inner.outputs()) {
      for (const auto& name : slot.vars()) {
        if (!local.count(name)) written.insert(name);
      }
    }
  }
  std::map<std::string, const proto::VarDesc*> outer;
  for (const auto& name : written) {
    const proto::VarDesc* desc = FindVarDesc(*program, block, name);
    RILL_CHECK(desc != nullptr, kNotFound, "block ", body_index, " writes \"", name,
               "\", which no enclosing block declares");
    outer[name] = desc;
  }
  // Renames in op order: reads see the newest value of the pass.
  std::map<std::string, std::string> current;
  std::map<std::string, int> versions;
  std::set<std::string> read_first;
  for (int i = 0; i < body->ops_size(); ++i) {
    proto::OpDesc* inner = body->mutable_ops(i);
    for (auto& slot : *inner->mutable_inputs()) {
      for (auto& name : *slot.mutable_vars()) {
        if (!written.count(name)) continue;
        auto it = current.find(name);
        if (it != current.end()) {
          name = it->second;
        } else {
          read_first.insert(name);
          name += "@IN";
        }
      }
    }
    for (auto& slot : *inner->mutable_outputs()) {
      for (auto& name : *slot.mutable_vars()) {
        if (!written.count(name)) continue;
        const std::string original = name;
        name = original + "@PASS" + std::to_string(versions[original]++);
        current[original] = name;
      }
    }
  }
  // Declared after the walk: add_vars may move the descs `outer` points to
  // only when the body is an enclosing block, which it is not.
  std::vector<LoopVar> vars;
  for (const auto& name : written) {
    const proto::VarDesc like = *outer[name];
    for (int k = 0; k < versions[name]; ++k) {
      DeclareLike(body, like, name + "@PASS" + std::to_string(k));
    }
    LoopVar var{name, read_first.count(name) ? name + "@IN" : ""};
    if (!var.input.empty()) DeclareLike(body, like, var.input);
    proto::OpDesc* assign = body->add_ops();
    assign->set_type("assign");
    SetInput(assign, "X", {current[name]});
    SetOutput(assign, "Out", {name});
    vars.push_back(std::move(var));
  }
  // The loop: reads each loop variable it copies, records its passes.
  std::vector<std::string> names, inputs, reads = InputVars(*op, "X");
  for (const LoopVar& v : vars) {
    names.push_back(v.name);
    inputs.push_back(v.input);
    if (!v.input.empty() && std::find(reads.begin(), reads.end(), v.name) == reads.end()) {
      reads.push_back(v.name);
    }
  }
  proto::BlockDesc* parent = program->mutable_blocks(block);
  std::string steps = "while_" + std::to_string(body_index) + "@STEP_SCOPES";
  proto::VarDesc* steps_var = parent->add_vars();
  steps_var->set_name(steps);
  steps_var->set_kind(proto::STEP_SCOPES);
  steps_var->set_dtype(proto::FLOAT32);
  op = parent->mutable_ops(op_index);
  if (!reads.empty()) SetInput(op, "X", reads);
  SetOutput(op, "StepScopes", {steps});
  SetAttr(op, "loop_vars", names);
  SetAttr(op, "loop_var_inputs", inputs);
  return vars;
}

}  // namespace rill
