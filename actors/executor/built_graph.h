// BuiltGraph: the part of an actor graph that never changes once it is
// spawned. From the planned program's SSA graph it keeps, per node, what the
// hot path does not hold in the node's Task (its stream, how it runs, the
// variables it frees), the successor lists every slot's tasks point into, the
// feed nodes, the gradient merges in their global order and the variables
// freed after their last reader. Built once on the thread that spawns the
// graph; read by every thread afterwards without locks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/executor/gradient_merge.h"
#include "actors/executor/task.h"
#include "rill/execution_strategy.h"
#include "rill/op_actor.h"
#include "rill/op_schema.h"
#include "rill/place.h"
#include "runtime/desc/var_index.h"
#include "runtime/graph/data_parallel.h"
#include "runtime/graph/ssa_graph.h"

namespace rill {

struct BuiltGraph {
  // What the hot path does not need of a node (that is in its Task).
  struct Node {
    TaskKind kind = TaskKind::kKernel;  // how it runs (never kChunk)
    int stream = -1;                    // global stream id; -1 for a collective
    uint32_t predecessor_count = 0;
    int feed_index = -1;                          // feed nodes: index into `feeds`
    int merge = -1;                               // collectives: index into `merges` (its order)
    std::vector<int> releases;                    // releasable variables this node frees when done
    std::vector<int> cross_stream_producers;      // streams of predecessors on other streams
    const KernelFn* kernel = nullptr;             // kKernel and kFiber
    const TryKernelFn* try_kernel = nullptr;      // a Blocking() op's inline attempt
    std::shared_ptr<const OpActorFactory> actor;  // kActor
  };
  // A variable whose buffer can go once its last reader has run.
  struct Releasable {
    std::string name;
    int place = 0;    // -1: the shared copy
    int readers = 0;  // arrivals that release it (1 for a variable nobody reads)
  };
  // One feed node: which variable on which place.
  struct Feed {
    std::string name;
    int place = 0;
  };

  // Builds the graph of `plan` (its SSA graph `ssa`, its block's
  // declarations `declared`) on `places`. Throws
  // naming the op when one has no kernel for its place or cannot run there.
  BuiltGraph(const DataParallelPlan& plan, SsaGraph ssa, VarIndex declared,
             const std::vector<Place>& places, const ExecutionStrategy& strategy);

  int places() const { return plan.places; }
  int block_index() const { return plan.block_index; }
  int op_count() const { return plan.program().blocks(plan.block_index).ops_size(); }
  int successor_count(int node) const { return successor_begin[node + 1] - successor_begin[node]; }
  // "block B, op I (type) on place P stream S", "feed "x" on ...", for messages.
  std::string Describe(int node) const;
  // The variables the graph reads before writing them: what a run is fed.
  std::vector<std::string> FeedNames() const;

  const DataParallelPlan& plan;  // the planned program: kernel contexts point into it
  const std::vector<Place>& place_list;
  const SsaGraph ssa;
  const VarIndex declared;  // the planned block's visible declarations
  std::vector<Node> nodes;
  std::vector<int32_t> successor_list;   // all nodes' successors; tasks point into it
  std::vector<int32_t> successor_begin;  // by node, into successor_list (one past the last too)
  std::vector<int> sources;
  uint32_t sink_count = 0;
  int backward_nodes = 0;
  std::vector<Feed> feeds;                                       // by feed index
  std::unordered_map<std::string, std::vector<int>> feed_index;  // name -> feed index by place
  std::vector<GradientMerge> merges;                             // by order
  std::vector<Releasable> releasables;
  std::unordered_map<std::string, std::vector<int>> releasable_index;  // name -> indices

 private:
  // How ops of one type run (looked up once per type).
  struct OpKind {
    TaskKind task = TaskKind::kKernel;
    const OpSchema* schema = nullptr;
    std::shared_ptr<const OpActorFactory> actor;  // kActor
  };
  static OpKind KindOf(const std::string& type);
  void BuildNodes();
  // A compute node's kind, kernel or actor; `kinds` caches KindOf by type.
  void SetHowItRuns(const OpNode& op, Node& node,
                    std::unordered_map<std::string_view, OpKind>& kinds);
  void BuildReleases(const ExecutionStrategy& strategy);
};

}  // namespace rill
