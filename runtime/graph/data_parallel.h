// Data parallelism: how one training program becomes N replicas that each
// take a slice of the batch and merge their gradients.
//
// PlanDataParallel rewrites the block and says where every op runs:
//   - the loss gradient seed is multiplied by a per-place scale (@LOSS_SCALE@,
//     fed n_p / B for a place given n_p of the batch's B rows), so that summing
//     the places' gradients gives the gradient of the whole batch's mean even
//     when the batch does not split evenly;
//   - after the last backward write of each parameter gradient comes a
//     collective op ("allreduce" or "reduce") merging it over the places.
//     Gradients smaller than fuse_bytes share a collective, up to fuse_bytes
//     together. Collectives are numbered (attribute "order") in the order
//     their gradients complete in the program, the order every place issues them;
//   - forward and backward ops run on every place. Optimize ops run on every
//     place too with kAllReduce (each place updates its own parameter copy, so
//     the copies stay identical); with kReduce they run once, on the place that
//     owns the parameter (parameters are spread over places by size), reading
//     and writing one shared copy;
//   - persistable variables that are not parameters and that ops on every
//     place write (batch_norm's running mean and variance, updated in its
//     forward pass) are state of each place: every place keeps its own copy
//     (with kReduce too), starting from the scope's values, and no merge
//     touches them (they are not gradients). Place 0's copy is the scope's,
//     the one a checkpoint saves. So with N places each batch_norm
//     normalises its own slice and keeps its own running statistics, as
//     Fluid's and PyTorch DDP's batch norm do by default;
//   - sync_batch_norm (Builder::set_sync_batch_norm) sums its statistics over
//     the places instead: its sync_places_sum ops become "allreduce"
//     collectives of their variable, and every collective is numbered in
//     program order (so the running statistics stay alike on every place).
// With one place the plan leaves the program as it is.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "rill/build_strategy.h"
#include "rill/proto/program.pb.h"

namespace rill {

// Where the op at one index of the planned block runs.
struct OpPlacement {
  enum Kind {
    kEveryPlace,  // replicated: one node per place, on the place's own variables
    kOnePlace,    // once, on `place`, on the shared variables
    kCollective,  // once, across all places: a gradient merge
  };
  Kind kind = kEveryPlace;
  int place = 0;
};

struct DataParallelPlan {
  // The planned program (a copy, rewritten), on an arena of the plan's own.
  const proto::ProgramDesc& program() const { return *program_; }

  int block_index = 0;
  int places = 1;
  BuildStrategy strategy;
  std::vector<OpPlacement> ops;  // by op index in the planned block
  std::set<std::string> shared;  // variables with one copy for all places
  // Persistable non-parameter variables written on every place: one copy per
  // place, whatever the strategy (see above).
  std::set<std::string> place_state;
  std::string loss_scale;  // the per-place loss scale variable, or ""
  int collectives = 0;

  bool IsShared(const std::string& name) const { return shared.count(name) > 0; }
  bool IsPlaceState(const std::string& name) const { return place_state.count(name) > 0; }

  // Set by PlanDataParallel: the arena and the program on it.
  std::unique_ptr<google::protobuf::Arena> arena_;
  proto::ProgramDesc* program_ = nullptr;
};

inline constexpr const char* kLossScaleVar = "@LOSS_SCALE@";
inline constexpr const char* kProcessAllreduceOp = "process_allreduce";
inline constexpr const char* kSyncPlacesSumOp = "sync_places_sum";

// Data parallelism across processes (rill/process_group.h, `rill train
// --collective`): a copy of `program` with a "process_allreduce" op after the
// last backward write of each bucket of parameter gradients of block
// `block_index` (bucketed by `fuse_bytes` as for places), numbered in bucket
// order (attribute "order", of "count"): every rank issues them in that order.
// Each replaces its gradients by their mean over the ranks. Planned for
// several places (PlanDataParallel, ReduceStrategy::kReduce), each runs on one
// place after the bucket's reduce between places: hierarchical, one
// collective per bucket and process.
// `compression` (BuildStrategy's names: none, int8, int4) is how each op
// sends float32 gradients.
proto::ProgramDesc AddProcessAllreduce(
    const proto::ProgramDesc& program, int block_index, int64_t fuse_bytes,
    GradientCompression compression = GradientCompression::kNone);

// Plans block `block_index` (validated) for `places` places.
DataParallelPlan PlanDataParallel(const proto::ProgramDesc& program, int block_index, int places,
                                  const BuildStrategy& strategy = {});

}  // namespace rill
