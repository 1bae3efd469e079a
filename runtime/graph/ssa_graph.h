// SsaGraph: a block turned into a dependency graph that ops can run from out
// of order. Every write of a variable makes a new version of it (static single
// assignment), so an op depends exactly on the versions it reads. Versions
// that exist before the block runs (feeds, parameters) are version 0.
// Write-after-read and write-after-write hazards become control edges (dummy
// variables that carry no data) so that no op ever reads a value too new or
// too old. For N places the block is replicated once per place, and one
// collective node per gradient (or bucket of gradients) merges it over the
// places (data_parallel.h).
//
//   GraphOptions options;
//   options.streams_per_place = 2;
//   SsaGraph graph = BuildSsaGraph(program, /*block_index=*/0, options);
//   for (const OpNode& op : graph.ops) ...   // in a topological order
//
// Node ids index `ops` and `vars`. Ops appear in a topological order (program
// order, feed nodes first), which the executor relies on. A built graph is
// immutable and may be read from many threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/place.h"
#include "rill/proto/program.pb.h"
#include "runtime/desc/var_index.h"
#include "runtime/graph/data_parallel.h"

namespace rill {

// One version of one variable on one place.
struct VarNode {
  int id = 0;
  std::string name;            // the variable; a control edge's dummy has a name of its own
  int version = 0;             // 0: the value before the block runs
  int place = 0;               // index into SsaGraph::places; -1 for the copy all places share
  int producer = -1;           // op node id; -1 when nothing in the block produces it
  std::vector<int> consumers;  // op node ids
  bool control = false;        // a hazard edge: orders two ops, carries no data
  bool persistable = false;    // declared persistable (parameters, optimizer state)
};

enum class OpNodeKind {
  kCompute,     // an op of the block: runs its kernel
  kFeed,        // puts a fed tensor into a non-persistable variable read before any write
  kCollective,  // merges gradients over all places (place -1): a barrier, then a reduction
};

struct OpNode {
  int id = 0;
  OpNodeKind kind = OpNodeKind::kCompute;
  int op_index = -1;  // index of the op in its block; -1 for feed nodes
  std::string type;   // the op type, or "feed"
  int place = 0;      // index into SsaGraph::places; -1 for a collective
  int stream = 0;     // stream of the place the op runs on
  proto::OpRole role = proto::ROLE_FORWARD;
  int collective = -1;            // for collectives: the order every place issues them in
  double cost_ns = 0;             // estimated run time, set to assign streams by cost (when
                                  // a place has several streams), else 0
  std::vector<int> inputs;        // var node ids read (control dummies included)
  std::vector<int> outputs;       // var node ids written (control dummies included)
  std::vector<int> predecessors;  // op node ids this op waits for, sorted, unique
  std::vector<int> successors;    // op node ids waiting for this op, sorted, unique
};

struct GraphOptions {
  // One replica of the block per place.
  std::vector<Place> places = {Place::Cpu()};
  // Streams each place runs ops on (CPU: the number of ops that may run at once).
  int streams_per_place = 1;
  StreamAssignment assignment = StreamAssignment::kCostModel;
  // How several places share the work (data parallelism).
  BuildStrategy build;
  // Size assumed for unknown (-1) dims when estimating op costs.
  int64_t batch_hint = 64;
};

struct SsaGraph {
  std::vector<Place> places;
  int streams_per_place = 1;
  int block_index = 0;
  std::vector<OpNode> ops;
  std::vector<VarNode> vars;

  // Ops with no predecessor (run first) and with no successor (run last).
  std::vector<int> Sources() const;
  std::vector<int> Sinks() const;
  // Number of op -> op dependency edges.
  int64_t EdgeCount() const;
  int ControlEdgeCount() const;
};

// Builds the graph of block `block_index` over options.places, planned for
// data parallelism when there are several (data_parallel.h). The program must
// have passed Validate(); the graph keeps no reference to it. Op indices refer
// to the planned block.
SsaGraph BuildSsaGraph(const proto::ProgramDesc& program, int block_index,
                       const GraphOptions& options = {});
// The graph of a plan; options.places must have plan.places entries.
SsaGraph BuildSsaGraph(const DataParallelPlan& plan, const GraphOptions& options);
// The same, with the planned block's declarations already indexed.
SsaGraph BuildSsaGraph(const DataParallelPlan& plan, const GraphOptions& options,
                       const VarIndex& vars);

}  // namespace rill
