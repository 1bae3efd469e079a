// A parameter server's programs. Main: block 0 declares every variable the
// server holds; one listen_and_serv op names a prepare block (the ops that
// depend on no gradient) and one optimize block per parameter or slice.
// Startup: the original initialisers of those variables at full size (with
// the seeds they had, so values match the trainers'), then a split per
// variable cut by rows and an assign per per-slice copy of other state.
#include <algorithm>
#include <set>
#include <utility>

#include "rill/error.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "runtime/transpile/transpiler_plan.h"

namespace rill {
namespace {

void SetPlacement(proto::ProgramDesc* program, int block, int server) {
  proto::Placement* placement = program->mutable_blocks(block)->mutable_placement();
  placement->set_role(proto::Placement::ROLE_PSERVER);
  placement->set_index(server);
}

// Builds the server's main program; `originals` gets, for every variable it
// declares, the name of the variable of the original program it stands for.
class ServerMainBuilder {
 public:
  ServerMainBuilder(const TranspilePlan& plan, int server, proto::ProgramDesc* program,
                    std::map<std::string, std::string>* originals)
      : plan_(plan), server_(server), program_(program), originals_(originals) {}

  void Build() {
    AppendBlock(program_, -1);
    int prepare = -1;
    if (!plan_.analysis.prepare_ops.empty()) {
      prepare = AppendBlock(program_, 0);
      SetPlacement(program_, prepare, server_);
      CopyOps(plan_.analysis.prepare_ops, {}, {}, prepare);
    }
    std::vector<int> blocks;
    std::vector<std::string> grads, params;
    for (const PlacedUpdate& unit : plan_.units) {
      if (unit.placed.server != server_) continue;
      const int block = AppendBlock(program_, 0);
      SetPlacement(program_, block, server_);
      CopyOps(unit.update->ops, unit.renames, unit.slice_shapes, block);
      blocks.push_back(block);
      grads.push_back(unit.placed.grad);
      params.push_back(unit.placed.var);
    }
    proto::OpDesc* serve = program_->mutable_blocks(0)->add_ops();
    serve->set_type("listen_and_serv");
    serve->set_role(proto::ROLE_OPTIMIZE);
    SetAttr(serve, "endpoint", plan_.options.pservers[static_cast<size_t>(server_)]);
    SetAttr(serve, "trainers", plan_.options.trainers);
    SetAttr(serve, "sync_mode", plan_.options.sync_mode);
    SetAttr(serve, "server_index", server_);
    auto* list = MutableAttr(serve, "optimize_blocks")->mutable_blocks();
    for (int b : blocks) list->add_values(b);
    SetAttr(serve, "grads", grads);
    SetAttr(serve, "params", params);
    if (prepare >= 0) SetBlockAttr(serve, "prepare_block", prepare);
  }

 private:
  // Copies ops of the placeable block into `block`, declaring in block 0
  // (renamed, and cut by rows where `shapes` says) what they use outside.
  void CopyOps(const std::vector<int>& indices, const Renames& renames,
               const std::map<std::string, std::vector<int64_t>>& shapes, int block) {
    const proto::BlockDesc& source = plan_.main->blocks(plan_.block());
    for (int j : indices) {
      const BlockAccess access = OpAccess(*plan_.main, source.ops(j));
      for (const auto* names : {&access.reads, &access.writes}) {
        for (const auto& name : *names) Declare(name, renames, shapes);
      }
      proto::OpDesc copy = CopyOp(*plan_.main, source.ops(j), renames, program_, block);
      *program_->mutable_blocks(block)->add_ops() = std::move(copy);
    }
  }

  void Declare(const std::string& original, const Renames& renames,
               const std::map<std::string, std::vector<int64_t>>& shapes) {
    auto renamed = renames.find(original);
    const std::string& name = renamed != renames.end() ? renamed->second : original;
    proto::BlockDesc* root = program_->mutable_blocks(0);
    if (FindLocalVarDesc(root, name) != nullptr) return;
    const proto::VarDesc* desc = plan_.Declaration(original);
    RILL_CHECK(desc != nullptr, kInternal, "variable ", original,
               " used by the placeable block is not declared");
    proto::VarDesc* var = root->add_vars();
    *var = *desc;
    var->set_name(name);
    if (auto shape = shapes.find(name); shape != shapes.end()) {
      var->clear_shape();
      for (int64_t d : shape->second) var->add_shape(d);
    }
    (*originals_)[name] = original;
  }

  const TranspilePlan& plan_;
  int server_;
  proto::ProgramDesc* program_;
  std::map<std::string, std::string>* originals_;
};

// The startup ops (indices into block 0) that produce `wanted`, and what
// those read, in program order.
std::vector<int> StartupOps(const proto::ProgramDesc& startup, std::set<std::string> wanted) {
  const proto::BlockDesc& block = startup.blocks(0);
  std::vector<int> ops;
  for (int i = block.ops_size() - 1; i >= 0; --i) {
    const BlockAccess access = OpAccess(startup, block.ops(i));
    if (std::none_of(access.writes.begin(), access.writes.end(),
                     [&](const std::string& w) { return wanted.count(w) > 0; })) {
      continue;
    }
    ops.push_back(i);
    wanted.insert(access.reads.begin(), access.reads.end());
  }
  std::reverse(ops.begin(), ops.end());
  return ops;
}

void DeclareFrom(const proto::VarDesc& like, const std::string& name,
                 const std::vector<int64_t>* shape, proto::BlockDesc* block) {
  if (FindLocalVarDesc(block, name) != nullptr) return;
  proto::VarDesc* var = block->add_vars();
  *var = like;
  var->set_name(name);
  if (shape != nullptr) {
    var->clear_shape();
    for (int64_t d : *shape) var->add_shape(d);
  }
}

proto::ProgramDesc BuildServerStartup(const TranspilePlan& plan, int server,
                                      const std::map<std::string, std::string>& originals) {
  const proto::ProgramDesc& startup = *plan.startup;
  RILL_CHECK(startup.blocks_size() > 0, kInvalidArgument, "the startup program has no blocks");
  proto::ProgramDesc program;
  program.set_random_seed(startup.random_seed());
  AppendBlock(&program, -1);
  proto::BlockDesc* root = program.mutable_blocks(0);
  std::set<std::string> wanted;
  for (const auto& [name, original] : originals) wanted.insert(original);

  std::set<std::string> initialised;
  for (int i : StartupOps(startup, wanted)) {
    proto::OpDesc op = CopyOp(startup, startup.blocks(0).ops(i), {}, &program, 0);
    // Moved, the op would draw from another generator: pin the one it had.
    const OpSchema* schema = FindOpSchema(op.type());
    const proto::Attr* seed = FindAttr(op, "seed");
    if (schema != nullptr && schema->FindAttr("seed") != nullptr &&
        (seed == nullptr || seed->i() == 0)) {
      SetAttr(&op, "seed", static_cast<int64_t>(OpSeed(startup, 0, i)));
    }
    const BlockAccess access = OpAccess(startup, op);
    for (const auto* names : {&access.reads, &access.writes}) {
      for (const auto& name : *names) {
        const proto::VarDesc* desc = FindVarDesc(startup, 0, name);
        if (desc != nullptr) DeclareFrom(*desc, name, nullptr, root);
      }
    }
    initialised.insert(access.writes.begin(), access.writes.end());
    *root->add_ops() = std::move(op);
  }

  // Cut what was initialised at full size into the slices (all of them:
  // split makes every part; the server keeps its own).
  std::set<std::string> split_done;
  for (const PlacedUpdate& unit : plan.units) {
    if (unit.placed.server != server) continue;
    for (const auto& [original, renamed] : unit.renames) {
      if (!initialised.count(original)) continue;
      const proto::VarDesc& desc = *FindVarDesc(program, 0, original);
      auto sections = plan.sections.find(original);
      if (sections == plan.sections.end()) {
        proto::OpDesc* assign = root->add_ops();
        assign->set_type("assign");
        SetInput(assign, "X", {original});
        SetOutput(assign, "Out", {renamed});
        DeclareFrom(desc, renamed, nullptr, root);
        continue;
      }
      if (!split_done.insert(original).second) continue;
      std::vector<std::string> parts;
      std::vector<int64_t> shape(desc.shape().begin(), desc.shape().end());
      for (size_t k = 0; k < sections->second.size(); ++k) {
        parts.push_back(SliceName(original, static_cast<int>(k)));
        shape[0] = sections->second[k];
        DeclareFrom(desc, parts.back(), &shape, root);
      }
      proto::OpDesc* split = root->add_ops();
      split->set_type("split");
      SetInput(split, "X", {original});
      SetOutput(split, "Out", parts);
      SetAttr(split, "axis", 0);
      SetAttr(split, "sections", sections->second);
    }
  }
  return program;
}

}  // namespace

ServerProgram BuildServer(const TranspilePlan& plan, int server) {
  ServerProgram result;
  result.endpoint = plan.options.pservers[static_cast<size_t>(server)];
  std::map<std::string, std::string> originals;
  result.main.set_random_seed(plan.main->random_seed());
  ServerMainBuilder(plan, server, &result.main, &originals).Build();
  result.startup = BuildServerStartup(plan, server, originals);
  for (const PlacedUpdate& unit : plan.units) {
    if (unit.placed.server == server) result.elements += unit.placed.elements;
  }
  return result;
}

}  // namespace rill
