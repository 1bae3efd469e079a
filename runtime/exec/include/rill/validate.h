// Program validation, run before anything executes. Rejects unknown op types,
// missing or unknown slots, undeclared variables, attributes of the wrong type
// or out of range, shape mismatches found by shape inference, bad sub-block
// indices and cycles through sub-blocks, non-finite float attributes (unless
// the op's schema allows them) and sub-blocks nested deeper than
// kMaxSubBlockNesting. Messages name block, op index, op type and variable:
//   block 0, op 3 (mul), variable "w1": input Y: X's dim 1 and Y's dim 0 differ: 784 vs 100
//
// Time is linear in the program's size, however deeply its blocks nest.
#pragma once

#include <map>
#include <string>

#include "rill/proto/program.pb.h"
#include "rill/shape_context.h"

namespace rill {

// How deep ops may nest sub-blocks (a while in a while in ...): each level is a
// kernel that runs its sub-block on the caller's stack, and a go block's stack
// is a fiber's 1 MiB. Blocks that only declare a parent and that no op runs
// may nest deeper: nothing recurses over them.
inline constexpr int kMaxSubBlockNesting = 64;

// Throws rill::Error(kInvalidArgument or kNotFound) describing the first problem.
void Validate(const proto::ProgramDesc& program);

// Runs shape inference for one op against `vars` (name -> known shape/type),
// writing its outputs' inferred shapes into `vars`. Throws on a mismatch.
// The builder uses it to declare output variables.
void InferOpShapes(const proto::OpDesc& op, VarInfoMap* vars);

}  // namespace rill
