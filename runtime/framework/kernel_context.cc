#include "rill/kernel_context.h"

namespace rill {

KernelContext::KernelContext(const proto::OpDesc& op, const OpSchema& schema, Scope* scope,
                             Place place, uint64_t seed)
    : op_(op), schema_(schema), place_(place), scope_(scope), seed_(seed) {
  int vars = 0;
  for (const auto& s : op.inputs()) vars += s.vars_size();
  for (const auto& s : op.outputs()) vars += s.vars_size();
  vars_.reserve(static_cast<size_t>(vars));
  bindings_.reserve(static_cast<size_t>(op.inputs_size() + op.outputs_size()));
  auto bind = [this, scope](const google::protobuf::RepeatedPtrField<proto::Slot>& slots) {
    for (const auto& s : slots) {
      bindings_.push_back({s.name(), &s, static_cast<int>(vars_.size()), s.vars_size()});
      for (const auto& name : s.vars()) {
        Variable* v = scope->FindVar(name);
        vars_.push_back(v != nullptr ? v : scope->Var(name));
      }
    }
  };
  bind(op.inputs());
  input_count_ = static_cast<int>(bindings_.size());
  bind(op.outputs());
}

const KernelContext::Binding* KernelContext::FindBinding(bool input,
                                                         const std::string& slot) const {
  const Binding* begin = bindings_.data() + (input ? 0 : input_count_);
  const Binding* end =
      input ? bindings_.data() + input_count_ : bindings_.data() + bindings_.size();
  for (const Binding* b = begin; b != end; ++b) {
    if (b->slot == slot) return b;
  }
  return nullptr;
}

RunContext& KernelContext::run() const {
  RILL_CHECK(run_ != nullptr, kUnimplemented, "op ", op_.type(),
             " needs a run context (a sub-block or go block), which this executor does not give");
  return *run_;
}

Variable* KernelContext::InputVar(const std::string& slot, int i) const {
  const Binding* b = FindBinding(true, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < b->count, kInvalidArgument, "op ", op_.type(),
             " has no input ", slot, " #", i);
  return vars_[b->first + i];
}

Variable* KernelContext::OutputVar(const std::string& slot, int i) const {
  const Binding* b = FindBinding(false, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < b->count, kInvalidArgument, "op ", op_.type(),
             " has no output ", slot, " #", i);
  return vars_[b->first + i];
}

int KernelContext::InputCount(const std::string& slot) const {
  const Binding* b = FindBinding(true, slot);
  return b == nullptr ? 0 : b->count;
}

int KernelContext::OutputCount(const std::string& slot) const {
  const Binding* b = FindBinding(false, slot);
  return b == nullptr ? 0 : b->count;
}

const std::string& KernelContext::InputName(const std::string& slot, int i) const {
  const Binding* b = FindBinding(true, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < b->count, kInvalidArgument, "op ", op_.type(),
             " has no input ", slot, " #", i);
  return b->desc->vars(i);
}

bool KernelContext::InputReady(const std::string& slot, int i) const {
  const Binding* b = FindBinding(true, slot);
  return b != nullptr && i >= 0 && i < b->count && vars_[b->first + i]->tensor().initialized();
}

const Tensor& KernelContext::Input(const std::string& slot, int i) const {
  const Binding* b = FindBinding(true, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < b->count, kInvalidArgument, "op ", op_.type(),
             " has no input ", slot, " #", i);
  const Tensor& t = vars_[b->first + i]->tensor();
  if (!t.initialized()) {
    RILL_CHECK(!vars_[b->first + i]->holds_selected_rows(), kUnimplemented, "input ", slot,
               " of op ", op_.type(), " names variable \"", b->desc->vars(i),
               "\", which holds selected rows (a sparse gradient); this op needs a dense tensor");
    Fail(ErrorCode::kInvalidArgument, "input ", slot, " of op ", op_.type(), " names variable \"",
         b->desc->vars(i),
         "\", which holds no value (not fed, not initialised by the startup program, and "
         "not written by an earlier op)");
  }
  // A kernel reads its inputs where it runs: host memory for the CPU's, its
  // own device's for CUDA's.
  const bool readable = t.place().host_memory() ? place_.host_memory() : t.place() == place_;
  RILL_CHECK(readable, kInvalidArgument, "input ", slot, " of op ", op_.type(),
             " names variable \"", b->desc->vars(i), "\", which is on ", t.place().ToString(),
             " but the op runs on ", place_.ToString(), " (copy it with Tensor::CopyTo)");
  return t;
}

bool KernelContext::InputIsSelectedRows(const std::string& slot, int i) const {
  const Binding* b = FindBinding(true, slot);
  return b != nullptr && i >= 0 && i < b->count && vars_[b->first + i]->holds_selected_rows();
}

const SelectedRows& KernelContext::InputRows(const std::string& slot, int i) const {
  RILL_CHECK(InputIsSelectedRows(slot, i), kInvalidArgument, "input ", slot, " #", i, " of op ",
             op_.type(), " holds no selected rows");
  return vars_[FindBinding(true, slot)->first + i]->selected_rows();
}

SelectedRows* KernelContext::OutputRows(const std::string& slot, int i) {
  const Binding* b = FindBinding(false, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < b->count, kInvalidArgument, "op ", op_.type(),
             " has no output ", slot, " #", i);
  *vars_[b->first + i]->mutable_tensor() = Tensor();  // the variable now holds rows, not a tensor
  return vars_[b->first + i]->mutable_selected_rows();
}

Tensor* KernelContext::Output(const std::string& slot, int i) {
  const Binding* b = FindBinding(false, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < b->count, kInvalidArgument, "op ", op_.type(),
             " has no output ", slot, " #", i);
  Variable* v = vars_[b->first + i];
  if (v->holds_selected_rows()) v->Clear();  // a dense value replaces selected rows
  return v->mutable_tensor();
}

}  // namespace rill
