#include "rill/program.h"

#include "rill/op_desc.h"

namespace rill {

Program::Program() {
  auto* block = desc_.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
}

std::string Program::UniqueName(const std::string& prefix) {
  return prefix + "_" + std::to_string(name_counters_[prefix]++);
}

Program Program::CloneForTest() const {
  Program copy = *this;
  for (auto& block : *copy.desc_.mutable_blocks()) {
    for (auto& op : *block.mutable_ops()) {
      if (op.type() == "dropout") SetAttr(&op, "is_test", true);
    }
  }
  return copy;
}

}  // namespace rill
