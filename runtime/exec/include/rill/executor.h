// Executor: the sequential reference executor. It runs the ops of one block
// in program order on one thread; every other executor in Rill must produce
// the same numbers.
//
//   Executor exe;
//   exe.Run(startup, &scope);                        // initialise parameters once
//   auto step = exe.Prepare(main, &scope);           // bind ops to variables once
//   auto out = exe.Run(*step, {{"x", x}, {"y", y}}, {"loss"});
//
// All variables of the block live in the given scope (temporaries included, so
// their buffers are reused from step to step). A failed op throws rill::Error
// naming block, op index and op type; the scope stays usable. Go blocks run on
// threads of their own; a run ends after them, failing with their first error.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rill/feeds.h"
#include "rill/kernel_context.h"
#include "rill/place.h"
#include "rill/proto/program.pb.h"
#include "rill/scope.h"
#include "rill/tensor.h"

namespace rill {

class ThreadRunContext;

// A block whose ops are bound to a scope's variables, ready to run repeatedly.
class PreparedBlock {
 public:
  struct Op {
    const OpSchema* schema;
    const KernelFn* kernel;
    std::unique_ptr<KernelContext> context;
  };
  PreparedBlock();
  ~PreparedBlock();
  PreparedBlock(const PreparedBlock&) = delete;
  PreparedBlock& operator=(const PreparedBlock&) = delete;

  const proto::ProgramDesc& program() const { return *program_; }
  int block_index() const { return block_index_; }
  Scope* scope() const { return scope_; }
  std::vector<Op>& ops() { return ops_; }

 private:
  friend class Executor;
  proto::ProgramDesc own_program_;  // a private copy (top-level blocks): contexts point into it
  const proto::ProgramDesc* program_ = &own_program_;
  int block_index_ = 0;
  Scope* scope_ = nullptr;
  std::vector<Op> ops_;
  // A top-level block's run (its go blocks); a sub-block runs in its caller's.
  std::unique_ptr<ThreadRunContext> own_run_;
  // A top-level block's variables read before written: checked before a run.
  std::vector<std::pair<std::string, int>> first_reads_;
  RunContext* run_ = nullptr;
};

class Executor {
 public:
  explicit Executor(Place place = Place::Cpu()) : place_(place) {}

  // Validates the program and binds block `block_index` to `scope`.
  std::unique_ptr<PreparedBlock> Prepare(const proto::ProgramDesc& program, Scope* scope,
                                         int block_index = 0) const;
  // Binds feeds, runs every op in order, returns the fetched tensors (sharing
  // memory with the scope's variables until the next step overwrites them).
  std::vector<Tensor> Run(PreparedBlock& block, const FeedList& feeds = {},
                          const std::vector<std::string>& fetches = {}) const;
  // Binds sub-block `block_index` of `run`'s program (already validated, not
  // copied) to `scope`, its ops running in `run`: how go, while and select run
  // their bodies, on either executor.
  std::unique_ptr<PreparedBlock> PrepareSubBlock(RunContext& run, Scope* scope,
                                                 int block_index) const;
  // Prepare + Run, once.
  std::vector<Tensor> Run(const proto::ProgramDesc& program, Scope* scope,
                          const FeedList& feeds = {},
                          const std::vector<std::string>& fetches = {}) const;

  Place place() const { return place_; }

  // Asked between the ops of a top-level run, at most once per `interval`:
  // when it returns true the run stops there and throws kCancelled naming the
  // op it stopped before (the scope keeps what the ops before it wrote). How
  // an embedding program's interrupt (Python's Ctrl-C) ends a long step. Set
  // it before running; it is called on the thread that runs the step.
  void set_interrupt_check(std::function<bool()> check,
                           std::chrono::milliseconds interval = std::chrono::milliseconds(50)) {
    interrupt_check_ = std::move(check);
    interrupt_interval_ = interval;
  }

 private:
  void Bind(PreparedBlock& prepared, Scope* scope, int block_index) const;
  void RunOps(PreparedBlock& block) const;

  Place place_;
  std::function<bool()> interrupt_check_;
  std::chrono::milliseconds interrupt_interval_{50};
};

// Checks a fed value against the declaration of its variable (`desc`: null
// when block `block_index` has none): it holds a value of the declared type and
// a compatible shape. Throws naming the feed. Every executor checks feeds so.
void CheckFeed(const proto::VarDesc* desc, const std::string& name, const Tensor& tensor,
               int block_index);

// Fails a run whose op `op_index` reads variable `name`, which nothing before
// it writes and which was neither fed nor holds a value in the scope. Every
// executor reports a missing feed so, before any op runs.
[[noreturn]] void FailMissingFeed(int block_index, int op_index, const std::string& op_type,
                                  const std::string& name);

// Seed of the random generator of op `op_index` in `block_index`: the op's
// "seed" attribute when non-zero, else mixed from the program's random_seed.
uint64_t OpSeed(const proto::ProgramDesc& program, int block_index, int op_index);

}  // namespace rill
