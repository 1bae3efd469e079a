// Program validation, run before anything executes. Rejects unknown op types,
// missing or unknown slots, undeclared variables, attributes of the wrong type
// or out of range, shape mismatches found by shape inference, bad sub-block
// indices and cycles through sub-blocks. Messages name block, op index, op
// type and variable:
//   block 0, op 3 (mul), variable "w1": input Y: X's dim 1 and Y's dim 0 differ: 784 vs 100
#pragma once

#include <map>
#include <string>

#include "rill/proto/program.pb.h"
#include "rill/shape_context.h"

namespace rill {

// Throws rill::Error(kInvalidArgument or kNotFound) describing the first problem.
void Validate(const proto::ProgramDesc& program);

// Runs shape inference for one op against `vars` (name -> known shape/type),
// writing its outputs' inferred shapes into `vars`. Throws on a mismatch.
// The builder uses it to declare output variables.
void InferOpShapes(const proto::OpDesc& op, VarInfoMap* vars);

}  // namespace rill
