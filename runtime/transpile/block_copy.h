// Moving ops between programs: copying an op under new variable names
// together with the sub-blocks it runs, appending and removing blocks (the
// other blocks renumbered). The distribute transpiler builds its trainer
// and server programs with these.
#pragma once

#include <map>
#include <set>
#include <string>

#include "rill/proto/program.pb.h"

namespace rill {

// Variable renames: old name -> new name; names not listed stay.
using Renames = std::map<std::string, std::string>;

// Appends an empty block to `program` under block `parent`; returns its index.
int AppendBlock(proto::ProgramDesc* program, int parent);

// A copy of `op` (of program `source`) with its slot variables renamed. The
// sub-blocks it names are copied into `target` (recursively, their ops'
// variables renamed too, their own declarations kept) as blocks under
// `target_parent`, and the copy names those.
proto::OpDesc CopyOp(const proto::ProgramDesc& source, const proto::OpDesc& op,
                     const Renames& renames, proto::ProgramDesc* target, int target_parent);

// Block `block` and every block under it.
std::set<int> BlockTree(const proto::ProgramDesc& program, int block);

// Removes `blocks` (no op left may name them) and renumbers the others, in
// their indices, parents and ops' block attributes.
void RemoveBlocks(proto::ProgramDesc* program, const std::set<int>& blocks);

}  // namespace rill
