// KernelContext: what a kernel sees when it runs — its bound input and output
// tensors by slot, its attributes, its place, and a random generator that
// belongs to this op instance (seeded once, advancing across runs).
// One context per prepared op; kernels of different ops may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/op_schema.h"
#include "rill/place.h"
#include "rill/proto/program.pb.h"
#include "rill/run_context.h"
#include "rill/scope.h"
#include "rill/shape_context.h"

namespace rill {

class KernelContext {
 public:
  // Binds the op's slots to variables of `scope`; creates output variables.
  KernelContext(const proto::OpDesc& op, const OpSchema& schema, Scope* scope, Place place,
                uint64_t seed);

  // Input i of a slot. Throws kInvalidArgument naming the variable when it has no value yet.
  const Tensor& Input(const std::string& slot, int i = 0) const;
  // Inputs that are bound (possibly to an unwritten variable) count here.
  int InputCount(const std::string& slot) const;
  bool HasInput(const std::string& slot) const { return InputCount(slot) > 0; }
  // True when input i is bound and holds a value.
  bool InputReady(const std::string& slot, int i = 0) const;
  const std::string& InputName(const std::string& slot, int i = 0) const;

  // Row-sparse values (the gradient of an embedding looked up with is_sparse).
  // InputIsSelectedRows says which an input holds; InputRows throws when it
  // holds no selected rows.
  bool InputIsSelectedRows(const std::string& slot, int i = 0) const;
  const SelectedRows& InputRows(const std::string& slot, int i = 0) const;
  SelectedRows* OutputRows(const std::string& slot, int i = 0);

  Tensor* Output(const std::string& slot, int i = 0);
  int OutputCount(const std::string& slot) const;
  bool HasOutput(const std::string& slot) const { return OutputCount(slot) > 0; }

  template <class T>
  T Attr(const std::string& name) const {
    return ReadAttr<T>(op_, schema_, name);
  }

  const proto::OpDesc& op() const { return op_; }
  Place place() const { return place_; }
  // The scope the op's variables were bound in (ops that run a sub-block open
  // a child of it), and the run it belongs to (program, go blocks).
  Scope* scope() const { return scope_; }
  // Throws kUnimplemented naming the op when the executor gave no run context.
  RunContext& run() const;
  void set_run(RunContext* run) { run_ = run; }
  // Which of the executor's places the op runs on (0 with one place).
  int place_index() const { return place_index_; }
  void set_place_index(int index) { place_index_ = index; }
  // The variable bound to input or output i of a slot (for ops whose values
  // are objects such as channels).
  Variable* InputVar(const std::string& slot, int i = 0) const;
  Variable* OutputVar(const std::string& slot, int i = 0) const;
  // This op instance's generator: seeded from the op's "seed" attribute when
  // non-zero, else from the program seed and the op's position. Made on first
  // use (2.5 KB, seeded in 312 steps): most ops never draw a number.
  std::mt19937_64& rng() {
    if (!rng_) rng_ = std::make_unique<std::mt19937_64>(seed_);
    return *rng_;
  }

 private:
  // One slot's variables: `count` of vars_ from `first`. The names stay in
  // the op (`desc`), read only for messages.
  struct Binding {
    std::string slot;
    const proto::Slot* desc = nullptr;
    int first = 0;
    int count = 0;
  };
  // An input slot's binding (else an output's); nullptr if the op has no such slot.
  const Binding* FindBinding(bool input, const std::string& slot) const;

  const proto::OpDesc& op_;
  const OpSchema& schema_;
  Place place_;
  Scope* scope_;
  RunContext* run_ = nullptr;
  int place_index_ = 0;
  std::vector<Binding> bindings_;  // the inputs' slots, then the outputs'
  int input_count_ = 0;            // of bindings_
  std::vector<Variable*> vars_;    // every slot's variables, in bindings_ order
  uint64_t seed_;
  std::unique_ptr<std::mt19937_64> rng_;  // null until rng() is first called
};

}  // namespace rill
