#include "rill/scope.h"

#include <algorithm>
#include <mutex>

namespace rill {

const SelectedRows& Variable::selected_rows() const {
  static const SelectedRows kEmpty;
  return rows_ ? *rows_ : kEmpty;
}

SelectedRows* Variable::mutable_selected_rows() {
  if (!rows_) rows_ = std::make_unique<SelectedRows>();
  return rows_.get();
}

void Variable::Clear() {
  tensor_ = Tensor();
  rows_.reset();
  object_.reset();
}

std::shared_ptr<Scope> Scope::MakeLocal(Scope* parent) {
  auto local = std::make_shared<Scope>(parent);
  if (parent != nullptr) local->parent_owner_ = parent->weak_from_this().lock();
  return local;
}

Variable* Scope::Var(const std::string& name) {
  {
    std::shared_lock lock(mutex_);
    auto it = vars_.find(name);
    if (it != vars_.end()) return it->second.get();
  }
  std::unique_lock lock(mutex_);
  auto& slot = vars_[name];
  if (!slot) slot = std::make_unique<Variable>();
  return slot.get();
}

Variable* Scope::FindLocalVar(const std::string& name) const {
  std::shared_lock lock(mutex_);
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

Variable* Scope::FindVar(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    if (Variable* v = s->FindLocalVar(name)) return v;
  }
  return nullptr;
}

const Tensor& Scope::GetTensor(const std::string& name) const {
  Variable* v = FindVar(name);
  RILL_CHECK(v != nullptr, kNotFound, "variable \"", name, "\" is not in the scope");
  return v->tensor();
}

Tensor* Scope::GetMutableTensor(const std::string& name) {
  Variable* v = FindVar(name);
  RILL_CHECK(v != nullptr, kNotFound, "variable \"", name, "\" is not in the scope");
  return v->mutable_tensor();
}

Scope& Scope::NewChild() {
  std::unique_lock lock(mutex_);
  children_.push_back(std::make_unique<Scope>());
  children_.back()->parent_ = this;
  return *children_.back();
}

void Scope::DropChildren() {
  // Destroyed after the lock is released: that runs the destructors of the
  // variables' objects (readers, channels), which are not ours to run under it.
  std::vector<std::unique_ptr<Scope>> children;
  {
    std::unique_lock lock(mutex_);
    children.swap(children_);
  }
}

std::vector<std::string> Scope::LocalVarNames() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> names;
  names.reserve(vars_.size());
  for (const auto& [name, var] : vars_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rill
