#include "runtime/transpile/block_dependencies.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "rill/error.h"
#include "rill/op_desc.h"

namespace rill {
namespace {

std::string OpName(int block, int index, const proto::OpDesc& op) {
  return StrCat("block ", block, ", op ", index, " (", op.type(), ")");
}

// The ops (indices) that update `param`: its writers among `depends` ops,
// then the writers of what those read, transitively.
std::vector<int> UpdateOps(const std::string& param, const std::vector<BlockAccess>& access,
                           const std::vector<bool>& depends) {
  std::set<int> ops;
  std::set<std::string> seen{param};
  std::vector<std::string> pending{param};
  while (!pending.empty()) {
    const std::string var = pending.back();
    pending.pop_back();
    for (size_t j = 0; j < access.size(); ++j) {
      if (!depends[j] || !access[j].writes.count(var) || !ops.insert(static_cast<int>(j)).second) {
        continue;
      }
      for (const auto& read : access[j].reads) {
        if (seen.insert(read).second) pending.push_back(read);
      }
    }
  }
  return {ops.begin(), ops.end()};
}

// The gradient each op of `block` depends on ("" for none), following each
// variable's value in program order (a value kept from the last step, like
// a step counter, depends on none). Throws naming the op when one combines two.
std::vector<std::string> OpGradients(const proto::ProgramDesc& program, int block,
                                     const std::vector<BlockAccess>& access,
                                     const BlockAccess& outside) {
  const proto::BlockDesc& desc = program.blocks(block);
  std::map<std::string, std::set<std::string>> value_depends;
  for (const auto& name : outside.reads) {
    const proto::VarDesc* var = FindVarDesc(program, desc.parent_idx(), name);
    if (var != nullptr && !var->persistable()) value_depends[name] = {name};
  }
  std::vector<std::string> op_gradient(access.size());
  for (size_t i = 0; i < access.size(); ++i) {
    std::set<std::string> grads;
    for (const auto& read : access[i].reads) {
      auto it = value_depends.find(read);
      if (it != value_depends.end()) grads.insert(it->second.begin(), it->second.end());
    }
    if (grads.size() >= 2) {
      const int op = static_cast<int>(i);
      Fail(ErrorCode::kInvalidArgument, OpName(block, op, desc.ops(op)), " combines the gradients ",
           *grads.begin(), " and ", *std::next(grads.begin()),
           ": a placeable block is split per parameter, so an op may depend on one gradient "
           "only; combine gradients before the block (as the optimizer does for clipping)");
    }
    for (const auto& write : access[i].writes) value_depends[write] = grads;
    if (!grads.empty()) op_gradient[i] = *grads.begin();
  }
  return op_gradient;
}

// The parameters the block writes (declared in `parent`), with the index of
// their first writer, in that order.
std::vector<std::pair<int, std::string>> ParametersByFirstWriter(
    const proto::ProgramDesc& program, int parent, const std::vector<BlockAccess>& access,
    const BlockAccess& outside) {
  const int n = static_cast<int>(access.size());
  std::vector<std::pair<int, std::string>> params;
  for (const auto& name : outside.writes) {
    const proto::VarDesc* var = FindVarDesc(program, parent, name);
    if (var == nullptr || !var->parameter()) continue;
    int first = n;
    for (int i = 0; i < n && first == n; ++i) {
      if (access[i].writes.count(name)) first = i;
    }
    params.emplace_back(first, name);
  }
  std::sort(params.begin(), params.end());
  return params;
}

}  // namespace

BlockAccess OpAccess(const proto::ProgramDesc& program, const proto::OpDesc& op) {
  BlockAccess access;
  for (const auto& slot : op.inputs()) access.reads.insert(slot.vars().begin(), slot.vars().end());
  for (const auto& slot : op.outputs())
    access.writes.insert(slot.vars().begin(), slot.vars().end());
  for (int sub : SubBlocksOf(op)) {
    const BlockAccess inner = ExternalAccess(program, sub);
    access.reads.insert(inner.reads.begin(), inner.reads.end());
    access.writes.insert(inner.writes.begin(), inner.writes.end());
  }
  return access;
}

PlaceableBlockAnalysis AnalyzePlaceableBlock(const proto::ProgramDesc& program, int block) {
  RILL_CHECK(block > 0 && block < program.blocks_size(), kOutOfRange, "block ", block,
             " is not a sub-block of the program (it has ", program.blocks_size(), " blocks)");
  const proto::BlockDesc& desc = program.blocks(block);
  const int parent = desc.parent_idx();
  const int n = desc.ops_size();
  PlaceableBlockAnalysis result;
  result.block = block;

  std::vector<BlockAccess> access;
  for (const auto& op : desc.ops()) access.push_back(OpAccess(program, op));
  const BlockAccess outside = ExternalAccess(program, block);

  const std::vector<std::string> op_gradient = OpGradients(program, block, access, outside);
  std::vector<bool> depends(static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    depends[i] = !op_gradient[i].empty();
    if (!depends[i]) result.prepare_ops.push_back(i);
  }
  const std::vector<std::pair<int, std::string>> params =
      ParametersByFirstWriter(program, parent, access, outside);

  std::vector<int> owner(static_cast<size_t>(n), -1);  // index into result.updates
  std::map<std::string, std::string> grad_owner;       // gradient -> parameter
  for (const auto& [first, param] : params) {
    ParameterUpdate update;
    update.param = param;
    update.ops = UpdateOps(param, access, depends);
    RILL_CHECK(!update.ops.empty(), kInvalidArgument, "parameter ", param, " is written by ",
               OpName(block, first, desc.ops(first)),
               ", which depends on no gradient: a placeable block updates parameters from "
               "gradients");
    const int index = static_cast<int>(result.updates.size());
    for (int j : update.ops) {
      if (owner[j] >= 0) {
        Fail(ErrorCode::kInvalidArgument, OpName(block, j, desc.ops(j)), " depends on gradient ",
             op_gradient[j], " and feeds the updates of two parameters, ",
             result.updates[owner[j]].param, " and ", param,
             ": it cannot be split across parameter servers");
      }
      owner[j] = index;
      if (update.grad.empty()) update.grad = op_gradient[j];
      if (op_gradient[j] != update.grad) {
        Fail(ErrorCode::kInvalidArgument, "the updates of ", param, " read two gradients, ",
             update.grad, " and ", op_gradient[j], " (", OpName(block, j, desc.ops(j)),
             "): an update reads one gradient");
      }
    }
    auto [it, fresh] = grad_owner.emplace(update.grad, param);
    RILL_CHECK(fresh, kInvalidArgument, "gradient ", update.grad, " feeds the updates of ",
               it->second, " and ", param, ": each parameter needs a gradient of its own");
    result.gradients.push_back(update.grad);
    result.updates.push_back(std::move(update));
  }
  for (int i = 0; i < n; ++i) {
    if (depends[i] && owner[i] < 0) {
      Fail(ErrorCode::kInvalidArgument, OpName(block, i, desc.ops(i)), " depends on gradient ",
           op_gradient[i],
           " but updates no parameter: it has no server to run on; move it out of the "
           "placeable block");
    }
  }
  return result;
}

}  // namespace rill
