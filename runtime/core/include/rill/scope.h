// Scope: the names a run can see, mapped to variables. A child scope sees its
// ancestors' variables; creating a name in a child shadows the parent's.
//
// Thread safety: lookups and creation are safe from many threads (a
// shared_mutex guards the name table). A Variable's contents are not guarded:
// the executor orders its writers and readers.
//
// Lifetime: a scope must outlive every scope and go block that sees it. A
// scope the caller owns outright outlives the run (the executors wait for
// every go block). The scope an op makes for a sub-block's locals comes from
// MakeLocal: shared, and sharing its parent when the parent is shared too, so
// a go block started in it — which may outlive the op, and the go block or
// loop body that started it — keeps every scope it sees alive.
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/selected_rows.h"
#include "rill/tensor.h"

namespace rill {

// A value that is neither a tensor nor selected rows — a channel, a reader —
// shared by the ops (and go blocks) that name its variable.
class VarObject {
 public:
  virtual ~VarObject() = default;
  // What it is, for messages ("channel of float32[4], capacity 2").
  virtual std::string Describe() const = 0;
};

// A named slot holding a value: a dense tensor, row-sparse selected rows, or an object.
class Variable {
 public:
  const Tensor& tensor() const { return tensor_; }
  Tensor* mutable_tensor() { return &tensor_; }
  // Selected rows, created empty on first use.
  const SelectedRows& selected_rows() const;
  SelectedRows* mutable_selected_rows();
  bool holds_selected_rows() const { return rows_ != nullptr && rows_->initialized(); }
  // The object the variable holds (nullptr if none). Not thread-safe against
  // set_object: the executor orders the op that creates it before its users.
  const std::shared_ptr<VarObject>& object() const { return object_; }
  void set_object(std::shared_ptr<VarObject> object) { object_ = std::move(object); }
  // Drops whatever the variable holds.
  void Clear();

 private:
  Tensor tensor_;
  std::unique_ptr<SelectedRows> rows_;
  std::shared_ptr<VarObject> object_;
};

class Scope : public std::enable_shared_from_this<Scope> {
 public:
  Scope() = default;
  // A scope that sees `parent`'s variables but is owned by the caller; the
  // parent must outlive it.
  explicit Scope(const Scope* parent) : parent_(parent) {}
  // A scope for a sub-block's locals under `parent`, owned by whoever holds
  // the pointer; it shares ownership of `parent` when a shared_ptr owns that
  // (a MakeLocal scope), else `parent` must outlive it.
  static std::shared_ptr<Scope> MakeLocal(Scope* parent);
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // The variable `name` in this scope, created empty if absent here.
  Variable* Var(const std::string& name);
  // The variable `name` here or in the nearest ancestor that has it; nullptr if none.
  Variable* FindVar(const std::string& name) const;
  // Like FindVar, but only in this scope.
  Variable* FindLocalVar(const std::string& name) const;
  // Tensor of an existing variable; throws kNotFound naming the variable.
  const Tensor& GetTensor(const std::string& name) const;
  Tensor* GetMutableTensor(const std::string& name);

  // A new child scope, owned by this one.
  Scope& NewChild();
  // Removes every child scope (their variables go with them).
  void DropChildren();
  const Scope* parent() const { return parent_; }

  // Names of this scope's own variables, sorted.
  std::vector<std::string> LocalVarNames() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Variable>> vars_;
  std::vector<std::unique_ptr<Scope>> children_;
  const Scope* parent_ = nullptr;
  std::shared_ptr<const Scope> parent_owner_;  // parent_, when it is shared
};

}  // namespace rill
