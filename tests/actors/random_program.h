// Random programs for property tests of executors: DAGs of elementwise ops
// (with broadcasting), matrix products, reductions and n-ary sums over 4x4
// float tensors, where ops often write a variable that already exists (in
// place, or overwriting another), so the graph is full of write-after-read
// and write-after-write hazards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/executor.h"
#include "rill/proto/program.pb.h"

namespace rill::testing {

struct RandomProgram {
  proto::ProgramDesc program;
  std::vector<FeedList> feeds;  // one list per iteration
  FeedList state;               // initial values of the persistable variables
  std::vector<std::string> fetches;
  bool writes_state = false;  // some op writes a persistable variable
};

// Deterministic for a seed. `iterations` feed lists are made.
RandomProgram MakeRandomProgram(uint64_t seed, int iterations = 3);

}  // namespace rill::testing
