// Programs shaped like the DAGs of the executor benchmark, made of one tiny
// op ("bench_node": Out[1] = 0.5 * sum(X) + 1), so that what is timed is the
// executor's cost per node rather than the work:
//   chain    a line of N ops
//   fanout   one source, N - 2 ops reading it, one op reading them all
//   grid     a sqrt(N) x sqrt(N) wavefront: (i, j) reads (i-1, j) and (i, j-1)
//   random   N ops, each reading up to 4 distinct earlier ops chosen at random
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/proto/program.pb.h"

namespace rill::cli {

// Returns the program (bench_node is registered with the rill command); throws
// kInvalidArgument for an unknown shape or N < 3.
proto::ProgramDesc MakeDagProgram(const std::string& shape, int64_t nodes, uint64_t seed = 0);

// The variable holding the last node's output (fetch it to check the result).
std::string DagOutputName(const proto::ProgramDesc& program);

// For each op, the ops whose outputs it reads (every variable has one writer).
std::vector<std::vector<int>> DagPredecessors(const proto::ProgramDesc& program);

}  // namespace rill::cli
