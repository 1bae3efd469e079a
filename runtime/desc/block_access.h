// What a block reads and writes from outside itself: the variables its ops
// (and, recursively, the sub-blocks those ops run) use but that the block does
// not declare. An op that runs a sub-block reads and writes these on top of
// its own slots, so dependency analysis treats them as the op's inputs and
// outputs.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "rill/proto/program.pb.h"

namespace rill {

struct BlockAccess {
  std::set<std::string> reads;
  std::set<std::string> writes;
};

// Variables block `block_index` reads and writes that it does not declare.
// Cycles through sub-blocks are rejected by validation; here they stop the walk.
BlockAccess ExternalAccess(const proto::ProgramDesc& program, int block_index);

// A variable a block reads before any of its ops writes it, and the first op
// that reads it (directly, or in a sub-block it runs).
struct FirstRead {
  std::string name;
  int op_index;
};

// The non-persistable variables block `block_index` reads before writing
// them, in the order of their first readers: what a run of the block must be
// fed, or find holding a value in its scope (the feed rule, README "Feeds").
std::vector<FirstRead> ReadBeforeWritten(const proto::ProgramDesc& program, int block_index);

// The sub-block indices an op names in its attributes.
std::set<int> SubBlocksOf(const proto::OpDesc& op);

}  // namespace rill
