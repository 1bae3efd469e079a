#include "rill/executor.h"

#include <chrono>

#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/validate.h"
#include "runtime/desc/block_access.h"
#include "runtime/exec/thread_run_context.h"

namespace rill {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

[[noreturn]] void RethrowWithContext(const Error& e, int block, int index,
                                     const std::string& type) {
  throw Error(e.code(), StrCat("block ", block, ", op ", index, " (", type, "): ", e.message()));
}

}  // namespace

PreparedBlock::PreparedBlock() = default;
PreparedBlock::~PreparedBlock() = default;

void CheckFeed(const proto::VarDesc* desc, const std::string& name, const Tensor& tensor,
               int block_index) {
  RILL_CHECK(desc != nullptr, kNotFound, "feed \"", name, "\" is not a variable of block ",
             block_index);
  RILL_CHECK(tensor.initialized(), kInvalidArgument, "feed \"", name, "\" holds no value");
  RILL_CHECK(FromProto(desc->dtype()) == tensor.dtype(), kInvalidArgument, "feed \"", name,
             "\" is ", tensor.Describe(), " but the variable is declared ",
             DataTypeName(FromProto(desc->dtype())));
  RILL_CHECK(ShapesCompatible(VarShape(*desc), tensor.shape()), kInvalidArgument, "feed \"", name,
             "\" has shape ", ShapeToString(tensor.shape()), " but the variable is declared ",
             ShapeToString(VarShape(*desc)));
}

void FailMissingFeed(int block_index, int op_index, const std::string& op_type,
                     const std::string& name) {
  Fail(ErrorCode::kInvalidArgument, "block ", block_index, ", op ", op_index, " (", op_type,
       "): feed \"", name, "\" is missing (the op reads it and nothing before writes it)");
}

uint64_t OpSeed(const proto::ProgramDesc& program, int block_index, int op_index) {
  const auto& op = program.blocks(block_index).ops(op_index);
  if (const proto::Attr* seed = FindAttr(op, "seed");
      seed != nullptr && seed->value_case() == proto::Attr::kI && seed->i() != 0) {
    return static_cast<uint64_t>(seed->i());
  }
  return SplitMix64(program.random_seed() ^ (static_cast<uint64_t>(block_index) << 32) ^
                    static_cast<uint64_t>(op_index));
}

std::unique_ptr<PreparedBlock> Executor::Prepare(const proto::ProgramDesc& program, Scope* scope,
                                                 int block_index) const {
  Validate(program);
  RILL_CHECK(block_index >= 0 && block_index < program.blocks_size(), kOutOfRange, "block ",
             block_index, " does not exist (the program has ", program.blocks_size(), ")");
  auto prepared = std::make_unique<PreparedBlock>();
  prepared->own_program_ = program;
  prepared->own_run_ = std::make_unique<ThreadRunContext>(prepared->own_program_);
  prepared->run_ = prepared->own_run_.get();
  Bind(*prepared, scope, block_index);
  for (FirstRead& read : ReadBeforeWritten(prepared->program(), block_index))
    prepared->first_reads_.emplace_back(std::move(read.name), read.op_index);
  return prepared;
}

std::unique_ptr<PreparedBlock> Executor::PrepareSubBlock(RunContext& run, Scope* scope,
                                                         int block_index) const {
  RILL_CHECK(block_index >= 0 && block_index < run.program().blocks_size(), kOutOfRange, "block ",
             block_index, " does not exist (the program has ", run.program().blocks_size(), ")");
  auto prepared = std::make_unique<PreparedBlock>();
  prepared->program_ = &run.program();
  prepared->run_ = &run;
  Bind(*prepared, scope, block_index);
  return prepared;
}

void Executor::Bind(PreparedBlock& prepared, Scope* scope, int block_index) const {
  prepared.block_index_ = block_index;
  prepared.scope_ = scope;
  const auto& block = prepared.program().blocks(block_index);
  for (const auto& var : block.vars()) {
    if (scope->FindVar(var.name()) == nullptr) scope->Var(var.name());
  }
  for (int i = 0; i < block.ops_size(); ++i) {
    const auto& op = block.ops(i);
    const OpSchema& schema = GetOpSchema(op.type());
    const KernelFn* kernel = schema.FindKernel(place_.kind);
    if (kernel == nullptr) {
      Fail(ErrorCode::kUnimplemented, "block ", block_index, ", op ", i, " (", op.type(),
           "): no kernel for place ", place_.ToString(),
           " (protocol ops such as allreduce or send run only in the actor executor)");
    }
    auto context = std::make_unique<KernelContext>(op, schema, scope, place_,
                                                   OpSeed(prepared.program(), block_index, i));
    context->set_run(prepared.run_);
    prepared.ops_.push_back({&schema, kernel, std::move(context)});
  }
}

std::vector<Tensor> Executor::Run(PreparedBlock& block, const FeedList& feeds,
                                  const std::vector<std::string>& fetches) const {
  Scope* scope = block.scope();
  // Before anything runs: a training step would otherwise update the
  // parameters and only then say that a fetch was misspelt.
  for (const auto& name : fetches) {
    RILL_CHECK(FindVarDesc(block.program(), block.block_index(), name) != nullptr, kNotFound,
               "fetch \"", name, "\" is not a variable of block ", block.block_index());
  }
  for (const auto& [name, tensor] : feeds) {
    CheckFeed(FindVarDesc(block.program(), block.block_index(), name), name, tensor,
              block.block_index());
    scope->Var(name)->mutable_tensor()->ShareDataWith(tensor);
  }
  for (const auto& [name, op_index] : block.first_reads_) {
    const Variable* held = scope->FindVar(name);
    if (held == nullptr ||
        (!held->tensor().initialized() && !held->holds_selected_rows() && !held->object())) {
      const auto& ops = block.program().blocks(block.block_index()).ops();
      FailMissingFeed(block.block_index(), op_index, ops[op_index].type(), name);
    }
  }
  RunOps(block);
  std::vector<Tensor> results;
  results.reserve(fetches.size());
  for (const auto& name : fetches) {
    Variable* v = scope->FindVar(name);
    RILL_CHECK(v != nullptr && v->tensor().initialized(), kNotFound, "fetch \"", name,
               "\" holds no value after the run");
    results.push_back(v->tensor());
  }
  return results;
}

// A top-level block also waits for the go blocks it started: the run's error
// is the first of its own ops' and theirs.
void Executor::RunOps(PreparedBlock& block) const {
  ThreadRunContext* own = block.own_run_.get();
  auto& ops = block.ops();
  const bool interruptible = own != nullptr && interrupt_check_ != nullptr;
  auto next_check = std::chrono::steady_clock::now() + interrupt_interval_;
  try {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (interruptible && i > 0 && std::chrono::steady_clock::now() >= next_check) {
        next_check = std::chrono::steady_clock::now() + interrupt_interval_;
        if (interrupt_check_()) {
          Fail(ErrorCode::kCancelled, "block ", block.block_index(), ": interrupted before op ", i,
               " (", ops[i].schema->type(), ")");
        }
      }
      try {
        (*ops[i].kernel)(*ops[i].context);
      } catch (const Error& e) {
        RethrowWithContext(e, block.block_index(), static_cast<int>(i), ops[i].schema->type());
      } catch (const std::exception& e) {
        RethrowWithContext(Error(ErrorCode::kInternal, e.what()), block.block_index(),
                           static_cast<int>(i), ops[i].schema->type());
      }
      if (own == nullptr) block.run_->Progress();
    }
  } catch (...) {
    if (own == nullptr) throw;
    own->Fail(std::current_exception());
  }
  if (own != nullptr) {
    if (std::exception_ptr error = own->Join()) std::rethrow_exception(error);
  }
}

std::vector<Tensor> Executor::Run(const proto::ProgramDesc& program, Scope* scope,
                                  const FeedList& feeds,
                                  const std::vector<std::string>& fetches) const {
  auto prepared = Prepare(program, scope);
  return Run(*prepared, feeds, fetches);
}

}  // namespace rill
