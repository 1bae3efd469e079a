// Dependency analysis of a placeable block (actors/distributed/distributed.md): which of
// its ops update which parameter, from which gradient, and which ops depend
// on no gradient at all (learning-rate decay, step counters). Everything
// follows from what each op reads and writes — its slots and, through
// sub-blocks, ExternalAccess — so no op type is special.
//
//   PlaceableBlockAnalysis a = AnalyzePlaceableBlock(program, block);
//   for (const ParameterUpdate& u : a.updates) { /* u.param, u.grad, u.ops */ }
#pragma once

#include <string>
#include <vector>

#include "rill/proto/program.pb.h"
#include "runtime/desc/block_access.h"

namespace rill {

// What one op reads and writes: its slots plus what its sub-blocks access
// outside themselves.
BlockAccess OpAccess(const proto::ProgramDesc& program, const proto::OpDesc& op);

// The update of one parameter: the ops of the block that write it, or write
// a variable those ops read (optimizer state), transitively, among those
// that depend on a gradient.
struct ParameterUpdate {
  std::string param;
  std::string grad;      // the one gradient they read from outside the block
  std::vector<int> ops;  // op indices in the block, in program order
};

struct PlaceableBlockAnalysis {
  int block = -1;
  // The gradients (non-persistable variables the block reads from outside),
  // one per update, in the order of `updates`.
  std::vector<std::string> gradients;
  // Ops that depend on no gradient, in program order: every server runs
  // them once per step before its updates.
  std::vector<int> prepare_ops;
  // One per parameter the block writes, in the order of their first op.
  std::vector<ParameterUpdate> updates;
};

// Analyses block `block` of a validated program. Throws kInvalidArgument,
// naming the op, when the block cannot be split per parameter: an op depends
// on two gradients, feeds the updates of two parameters, or depends on a
// gradient without updating a parameter; or a gradient feeds two updates.
PlaceableBlockAnalysis AnalyzePlaceableBlock(const proto::ProgramDesc& program, int block);

}  // namespace rill
