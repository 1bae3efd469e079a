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
  // Each mutable access counts as a change (generation()).
  proto::ProgramDesc& desc() {
    ++generation_;
    return desc_;
  }
  proto::BlockDesc* root() { return desc().mutable_blocks(0); }
  // Goes up whenever the program may have changed (every mutable access to
  // its desc): what a runner that keeps something prepared from the program
  // compares, instead of the whole encoding, to see whether it still holds.
  uint64_t generation() const { return generation_; }

  // "fc" -> "fc_0", then "fc_1", ...
  std::string UniqueName(const std::string& prefix);
  void set_random_seed(uint64_t seed) { desc().set_random_seed(seed); }

  // A copy for evaluation: every op with an is_test attribute (dropout,
  // batch_norm) switched to its inference behaviour.
  Program CloneForTest() const;

 private:
  proto::ProgramDesc desc_;
  std::map<std::string, int> name_counters_;
  uint64_t generation_ = 0;
};

}  // namespace rill
