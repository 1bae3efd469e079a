#include "runtime/desc/var_index.h"

#include <vector>

namespace rill {

VarIndex::VarIndex(const proto::ProgramDesc& program, int block_index) {
  // Ancestors first, so that a nearer block's declaration overwrites a farther one's.
  // The walk is bounded by the block count so a malformed parent chain cannot loop.
  std::vector<int> chain;
  for (int b = block_index; b >= 0 && b < program.blocks_size() &&
                            static_cast<int>(chain.size()) <= program.blocks_size();
       b = program.blocks(b).parent_idx()) {
    chain.push_back(b);
  }
  size_t total = 0;
  for (int b : chain) total += static_cast<size_t>(program.blocks(b).vars_size());
  vars_.reserve(total);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    for (const auto& var : program.blocks(*it).vars()) vars_[var.name()] = &var;
  }
}

}  // namespace rill
