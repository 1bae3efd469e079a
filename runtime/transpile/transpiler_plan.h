// Internal to the distribute transpiler (transpiler*.cc): what Transpile
// decided before it writes any program — the placeable block's analysis and,
// per parameter or slice, its server and the names its update ops use.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "rill/proto/program.pb.h"
#include "rill/transpiler.h"
#include "runtime/transpile/block_copy.h"
#include "runtime/transpile/block_dependencies.h"

namespace rill {

// One optimize block: a parameter's update ops, on the whole parameter or
// on one row slice of it.
struct PlacedUpdate {
  const ParameterUpdate* update = nullptr;
  PlacedParameter placed;
  // Original names -> this slice's (empty for a whole parameter).
  Renames renames;
  // Shapes of the renamed variables cut by rows (the others keep theirs).
  std::map<std::string, std::vector<int64_t>> slice_shapes;
};

struct TranspilePlan {
  const proto::ProgramDesc* main = nullptr;
  const proto::ProgramDesc* startup = nullptr;
  TranspileOptions options;
  int op_block = 0;  // where the placeable_block op is
  int op_index = 0;
  PlaceableBlockAnalysis analysis;
  std::vector<PlacedUpdate> units;  // in update order, slices in row order
  // Variables cut by rows -> the rows of each slice.
  std::map<std::string, std::vector<int64_t>> sections;

  int block() const { return analysis.block; }
  // The declaration of `name` as the placeable block sees it (null if none).
  const proto::VarDesc* Declaration(const std::string& name) const;
};

// "v.slice3"
std::string SliceName(const std::string& var, int slice);

// Trainer main: the placeable_block op replaced by split/send/recv/concat.
proto::ProgramDesc BuildTrainerMain(const TranspilePlan& plan);
// Server `server`'s main and startup programs.
ServerProgram BuildServer(const TranspilePlan& plan, int server);

}  // namespace rill
