// VarIndex: the variable declarations a block can see (its own and its
// ancestors', nearer ones shadowing farther ones), looked up by name in O(1).
// Build one per block when looking up many names: FindVarDesc walks the
// declarations linearly. Holds pointers into the program, which must outlive it.
#pragma once

#include <string>
#include <unordered_map>

#include "rill/proto/program.pb.h"

namespace rill {

class VarIndex {
 public:
  VarIndex(const proto::ProgramDesc& program, int block_index);

  // nullptr when no visible declaration has that name.
  const proto::VarDesc* Find(const std::string& name) const {
    auto it = vars_.find(name);
    return it == vars_.end() ? nullptr : it->second;
  }
  const std::unordered_map<std::string, const proto::VarDesc*>& all() const { return vars_; }

 private:
  std::unordered_map<std::string, const proto::VarDesc*> vars_;
};

}  // namespace rill
