// What AppendBackward (backward.cc) does to a while loop before it can take
// its gradient. A loop variable — an outer variable the body writes (a
// recurrent state, the counter, the condition) — holds one value per pass,
// so the body is rewritten to read and write it through values of its own,
// which the loop records pass by pass (actors/channels/while_op.cc):
//
//   reads of v before the body writes it  ->  reads of "v@IN", a step-local
//                                              copy the loop makes each pass
//   each write of v (and the reads after)  ->  "v@PASS<k>", a new local
//   at the end of the body                 ->  assign v@PASS<last> to v
//
// The forward numbers do not change (the copies share memory). The loop op
// gets a StepScopes output and the attributes naming the loop variables.
#pragma once

#include <string>
#include <vector>

#include "rill/proto/program.pb.h"

namespace rill {

struct LoopVar {
  std::string name;   // the outer variable
  std::string input;  // the body's copy of it before a pass; empty: never read first
};

// Rewrites while op `op_index` of block `block` as above (once: a loop that
// already has its loop variables is left alone) and returns the loop
// variables, in name order. Throws kUnimplemented for a body that runs
// blocks of its own (nested loops, go, select).
std::vector<LoopVar> PrepareWhileForGradient(proto::ProgramDesc* program, int block, int op_index);

}  // namespace rill
