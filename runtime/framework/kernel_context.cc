#include "rill/kernel_context.h"

namespace rill {

KernelContext::KernelContext(const proto::OpDesc& op, const OpSchema& schema, Scope* scope,
                             Place place, uint64_t seed)
    : op_(op), schema_(schema), place_(place), scope_(scope), rng_(seed) {
  auto bind = [scope](const google::protobuf::RepeatedPtrField<proto::Slot>& slots,
                      std::vector<Binding>* out) {
    out->reserve(static_cast<size_t>(slots.size()));
    for (const auto& s : slots) {
      Binding b{s.name(), &s, {}};
      b.vars.reserve(static_cast<size_t>(s.vars_size()));
      for (const auto& name : s.vars()) {
        Variable* v = scope->FindVar(name);
        b.vars.push_back(v != nullptr ? v : scope->Var(name));
      }
      out->push_back(std::move(b));
    }
  };
  bind(op.inputs(), &inputs_);
  bind(op.outputs(), &outputs_);
}

const KernelContext::Binding* KernelContext::FindBinding(const std::vector<Binding>& list,
                                                         const std::string& slot) const {
  for (const auto& b : list) {
    if (b.slot == slot) return &b;
  }
  return nullptr;
}

RunContext& KernelContext::run() const {
  RILL_CHECK(run_ != nullptr, kUnimplemented, "op ", op_.type(),
             " needs a run context (a sub-block or go block), which this executor does not give");
  return *run_;
}

Variable* KernelContext::InputVar(const std::string& slot, int i) const {
  const Binding* b = FindBinding(inputs_, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()), kInvalidArgument,
             "op ", op_.type(), " has no input ", slot, " #", i);
  return b->vars[i];
}

Variable* KernelContext::OutputVar(const std::string& slot, int i) const {
  const Binding* b = FindBinding(outputs_, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()), kInvalidArgument,
             "op ", op_.type(), " has no output ", slot, " #", i);
  return b->vars[i];
}

int KernelContext::InputCount(const std::string& slot) const {
  const Binding* b = FindBinding(inputs_, slot);
  return b == nullptr ? 0 : static_cast<int>(b->vars.size());
}

int KernelContext::OutputCount(const std::string& slot) const {
  const Binding* b = FindBinding(outputs_, slot);
  return b == nullptr ? 0 : static_cast<int>(b->vars.size());
}

const std::string& KernelContext::InputName(const std::string& slot, int i) const {
  const Binding* b = FindBinding(inputs_, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()), kInvalidArgument,
             "op ", op_.type(), " has no input ", slot, " #", i);
  return b->desc->vars(i);
}

bool KernelContext::InputReady(const std::string& slot, int i) const {
  const Binding* b = FindBinding(inputs_, slot);
  return b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()) &&
         b->vars[i]->tensor().initialized();
}

const Tensor& KernelContext::Input(const std::string& slot, int i) const {
  const Binding* b = FindBinding(inputs_, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()), kInvalidArgument,
             "op ", op_.type(), " has no input ", slot, " #", i);
  const Tensor& t = b->vars[i]->tensor();
  if (!t.initialized()) {
    RILL_CHECK(!b->vars[i]->holds_selected_rows(), kUnimplemented, "input ", slot, " of op ",
               op_.type(), " names variable \"", b->desc->vars(i),
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
  const Binding* b = FindBinding(inputs_, slot);
  return b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()) &&
         b->vars[i]->holds_selected_rows();
}

const SelectedRows& KernelContext::InputRows(const std::string& slot, int i) const {
  RILL_CHECK(InputIsSelectedRows(slot, i), kInvalidArgument, "input ", slot, " #", i, " of op ",
             op_.type(), " holds no selected rows");
  return FindBinding(inputs_, slot)->vars[i]->selected_rows();
}

SelectedRows* KernelContext::OutputRows(const std::string& slot, int i) {
  const Binding* b = FindBinding(outputs_, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()), kInvalidArgument,
             "op ", op_.type(), " has no output ", slot, " #", i);
  *b->vars[i]->mutable_tensor() = Tensor();  // the variable now holds rows, not a tensor
  return b->vars[i]->mutable_selected_rows();
}

Tensor* KernelContext::Output(const std::string& slot, int i) {
  const Binding* b = FindBinding(outputs_, slot);
  RILL_CHECK(b != nullptr && i >= 0 && i < static_cast<int>(b->vars.size()), kInvalidArgument,
             "op ", op_.type(), " has no output ", slot, " #", i);
  Variable* v = b->vars[i];
  if (v->holds_selected_rows()) v->Clear();  // a dense value replaces selected rows
  return v->mutable_tensor();
}

}  // namespace rill
