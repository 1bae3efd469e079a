// What a block reads and writes from outside itself: the variables its ops
// (and, recursively, the sub-blocks those ops run) use but that the block does
// not declare. An op that runs a sub-block reads and writes these on top of
// its own slots, so dependency analysis treats them as the op's inputs and
// outputs.
#pragma once

#include <set>
#include <string>

#include "rill/proto/program.pb.h"

namespace rill {

struct BlockAccess {
  std::set<std::string> reads;
  std::set<std::string> writes;
};

// Variables block `block_index` reads and writes that it does not declare.
// Cycles through sub-blocks are rejected by validation; here they stop the walk.
BlockAccess ExternalAccess(const proto::ProgramDesc& program, int block_index);

// The sub-block indices an op names in its attributes.
std::set<int> SubBlocksOf(const proto::OpDesc& op);

}  // namespace rill
