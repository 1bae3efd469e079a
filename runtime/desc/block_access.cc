#include "runtime/desc/block_access.h"

#include <vector>

#include "runtime/desc/var_index.h"

namespace rill {
namespace {

void Collect(const proto::ProgramDesc& program, int block_index, std::vector<bool>* visiting,
             BlockAccess* out) {
  if (block_index < 0 || block_index >= program.blocks_size() || (*visiting)[block_index]) return;
  (*visiting)[block_index] = true;
  const proto::BlockDesc& block = program.blocks(block_index);
  std::set<std::string> local;
  for (const auto& var : block.vars()) local.insert(var.name());
  for (const auto& op : block.ops()) {
    for (const auto& slot : op.inputs()) {
      for (const auto& name : slot.vars()) {
        if (!local.count(name)) out->reads.insert(name);
      }
    }
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) {
        if (!local.count(name)) out->writes.insert(name);
      }
    }
    for (int sub : SubBlocksOf(op)) {
      BlockAccess inner;
      Collect(program, sub, visiting, &inner);
      for (const auto& name : inner.reads) {
        if (!local.count(name)) out->reads.insert(name);
      }
      for (const auto& name : inner.writes) {
        if (!local.count(name)) out->writes.insert(name);
      }
    }
  }
  (*visiting)[block_index] = false;
}

}  // namespace

BlockAccess ExternalAccess(const proto::ProgramDesc& program, int block_index) {
  BlockAccess access;
  std::vector<bool> visiting(static_cast<size_t>(program.blocks_size()), false);
  Collect(program, block_index, &visiting, &access);
  return access;
}

std::vector<FirstRead> ReadBeforeWritten(const proto::ProgramDesc& program, int block_index) {
  const VarIndex visible(program, block_index);
  std::set<std::string> written, listed;
  std::vector<FirstRead> reads;
  const proto::BlockDesc& block = program.blocks(block_index);
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    // The op's own outputs are written before its sub-blocks read them (a
    // select case reads what the select received).
    std::set<std::string> op_reads, own_outputs;
    for (const auto& slot : op.outputs())
      own_outputs.insert(slot.vars().begin(), slot.vars().end());
    for (const auto& slot : op.inputs()) op_reads.insert(slot.vars().begin(), slot.vars().end());
    std::set<std::string> op_writes = own_outputs;
    for (int sub : SubBlocksOf(op)) {
      BlockAccess access = ExternalAccess(program, sub);
      for (const auto& name : access.reads) {
        if (!own_outputs.count(name)) op_reads.insert(name);
      }
      op_writes.insert(access.writes.begin(), access.writes.end());
    }
    for (const auto& name : op_reads) {
      const proto::VarDesc* desc = visible.Find(name);
      if (desc == nullptr || desc->persistable() || written.count(name) ||
          !listed.insert(name).second)
        continue;
      reads.push_back({name, i});
    }
    written.insert(op_writes.begin(), op_writes.end());
  }
  return reads;
}

std::set<int> SubBlocksOf(const proto::OpDesc& op) {
  std::set<int> blocks;
  for (const auto& attr : op.attrs()) {
    if (attr.value_case() == proto::Attr::kBlock) blocks.insert(attr.block());
    if (attr.value_case() == proto::Attr::kBlocks) {
      blocks.insert(attr.blocks().values().begin(), attr.blocks().values().end());
    }
  }
  return blocks;
}

}  // namespace rill
