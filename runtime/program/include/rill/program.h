// Program: an owned ProgramDesc plus unique-name generation, the object the
// builder appends to. A training setup has two: the startup program
// (initialisers, run once) and the main program (run every step).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "rill/proto/program.pb.h"

namespace rill {

class Program {
 public:
  // A program with one empty root block.
  Program();
  explicit Program(proto::ProgramDesc desc) : desc_(std::move(desc)) {}

  const proto::ProgramDesc& desc() const { return desc_; }
  proto::ProgramDesc& desc() { return desc_; }
  proto::BlockDesc* root() { return desc_.mutable_blocks(0); }

  // "fc" -> "fc_0", then "fc_1", ...
  std::string UniqueName(const std::string& prefix);
  void set_random_seed(uint64_t seed) { desc_.set_random_seed(seed); }

  // A copy for evaluation: every op with an is_test attribute (dropout,
  // batch_norm) switched to its inference behaviour.
  Program CloneForTest() const;

 private:
  proto::ProgramDesc desc_;
  std::map<std::string, int> name_counters_;
};

}  // namespace rill
