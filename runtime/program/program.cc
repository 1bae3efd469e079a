#include "rill/program.h"

#include "rill/op_desc.h"
#include "rill/op_registry.h"

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
      // Every op with an is_test attribute (dropout, batch_norm), as Fluid's clone(for_test).
      const OpSchema* schema = FindOpSchema(op.type());
      if (schema != nullptr && schema->FindAttr("is_test") != nullptr) {
        SetAttr(&op, "is_test", true);
      }
    }
  }
  return copy;
}

}  // namespace rill
