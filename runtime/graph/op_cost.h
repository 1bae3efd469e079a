// Rough run-time estimates of ops, from their declared shapes: what the
// stream assignment balances. GEMM-like ops (mul, matmul, conv2d and their
// gradients) count multiply-adds, everything else the elements it touches.
// Only ratios matter; the constants are this machine's orders of magnitude.
#pragma once

#include <cstdint>

#include "rill/proto/program.pb.h"
#include "runtime/desc/var_index.h"
#include "runtime/graph/ssa_graph.h"

namespace rill {

// Fixed cost of running any op (binding, dispatch), in ns.
inline constexpr double kOpOverheadNs = 40;
// Cost of handing a value to an op on another stream of the same place, in ns:
// a queue push and, when that stream's thread is idle, a wake-up.
inline constexpr double kCrossStreamNs = 2000;

// Sets cost_ns of every node of `graph`, reading ops from block `block_index`
// of `program` and shapes from `vars`; unknown (-1) dims count as `batch_hint`.
void EstimateOpCosts(const proto::ProgramDesc& program, int block_index, const VarIndex& vars,
                     int64_t batch_hint, SsaGraph* graph);

}  // namespace rill
