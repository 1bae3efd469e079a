#include "runtime/transpile/block_copy.h"

#include <vector>

#include "rill/error.h"

namespace rill {
namespace {

void RenameSlots(google::protobuf::RepeatedPtrField<proto::Slot>* slots, const Renames& renames) {
  for (auto& slot : *slots) {
    for (auto& name : *slot.mutable_vars()) {
      auto it = renames.find(name);
      if (it != renames.end()) name = it->second;
    }
  }
}

// Copies block `block` of `source` under `target_parent`; returns the copy's index.
int CopyBlock(const proto::ProgramDesc& source, int block, const Renames& renames,
              proto::ProgramDesc* target, int target_parent) {
  const int copy = AppendBlock(target, target_parent);
  const proto::BlockDesc& from = source.blocks(block);
  *target->mutable_blocks(copy)->mutable_vars() = from.vars();
  if (from.has_placement()) *target->mutable_blocks(copy)->mutable_placement() = from.placement();
  for (const auto& op : from.ops()) {
    proto::OpDesc copied = CopyOp(source, op, renames, target, copy);
    *target->mutable_blocks(copy)->add_ops() = std::move(copied);
  }
  return copy;
}

}  // namespace

int AppendBlock(proto::ProgramDesc* program, int parent) {
  proto::BlockDesc* block = program->add_blocks();
  const int index = program->blocks_size() - 1;
  block->set_idx(index);
  block->set_parent_idx(parent);
  return index;
}

proto::OpDesc CopyOp(const proto::ProgramDesc& source, const proto::OpDesc& op,
                     const Renames& renames, proto::ProgramDesc* target, int target_parent) {
  proto::OpDesc copy = op;
  RenameSlots(copy.mutable_inputs(), renames);
  RenameSlots(copy.mutable_outputs(), renames);
  for (auto& attr : *copy.mutable_attrs()) {
    if (attr.value_case() == proto::Attr::kBlock) {
      attr.set_block(CopyBlock(source, attr.block(), renames, target, target_parent));
    } else if (attr.value_case() == proto::Attr::kBlocks) {
      for (auto& b : *attr.mutable_blocks()->mutable_values()) {
        b = CopyBlock(source, b, renames, target, target_parent);
      }
    }
  }
  return copy;
}

std::set<int> BlockTree(const proto::ProgramDesc& program, int block) {
  std::set<int> tree{block};
  // A child comes after its parent, so one pass in index order finds them all.
  for (int b = block + 1; b < program.blocks_size(); ++b) {
    if (tree.count(program.blocks(b).parent_idx())) tree.insert(b);
  }
  return tree;
}

void RemoveBlocks(proto::ProgramDesc* program, const std::set<int>& blocks) {
  std::vector<int> renumbered(static_cast<size_t>(program->blocks_size()), -1);
  int next = 0;
  for (int b = 0; b < program->blocks_size(); ++b) {
    if (!blocks.count(b)) renumbered[b] = next++;
  }
  auto map = [&](int b) {
    RILL_CHECK(b < 0 || (b < static_cast<int>(renumbered.size()) && renumbered[b] >= 0), kInternal,
               "block ", b, " is removed but still named");
    return b < 0 ? b : renumbered[b];
  };
  google::protobuf::RepeatedPtrField<proto::BlockDesc> kept;
  for (int b = 0; b < program->blocks_size(); ++b) {
    if (blocks.count(b)) continue;
    proto::BlockDesc block = program->blocks(b);
    block.set_idx(renumbered[b]);
    block.set_parent_idx(map(block.parent_idx()));
    for (auto& op : *block.mutable_ops()) {
      for (auto& attr : *op.mutable_attrs()) {
        if (attr.value_case() == proto::Attr::kBlock) attr.set_block(map(attr.block()));
        if (attr.value_case() == proto::Attr::kBlocks) {
          for (auto& v : *attr.mutable_blocks()->mutable_values()) v = map(v);
        }
      }
    }
    *kept.Add() = std::move(block);
  }
  program->mutable_blocks()->Swap(&kept);
}

}  // namespace rill
