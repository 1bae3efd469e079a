#include "runtime/graph/data_parallel.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "rill/data_type.h"
#include "rill/error.h"
#include "rill/op_desc.h"
#include "runtime/base/huge_pages.h"
#include "runtime/desc/var_index.h"

namespace rill {
namespace {

int64_t DeclaredBytes(const proto::VarDesc& desc) {
  int64_t n = static_cast<int64_t>(SizeOf(FromProto(desc.dtype())));
  for (int64_t d : desc.shape()) n *= d < 0 ? 1 : d;
  return n;
}

bool Writes(const proto::OpDesc& op, const std::string& name) {
  for (const auto& slot : op.outputs()) {
    for (const auto& v : slot.vars()) {
      if (v == name) return true;
    }
  }
  return false;
}

// A gradient to merge: the parameter, its gradient, where backward finishes it.
struct Gradient {
  std::string param;
  std::string grad;
  int last_write = -1;
  int64_t bytes = 0;
};

std::vector<Gradient> ParameterGradients(const proto::BlockDesc& block, const VarIndex& vars) {
  std::vector<Gradient> grads;
  for (const auto& var : block.vars()) {
    if (!var.parameter()) continue;
    const std::string grad = GradVarName(var.name());
    const proto::VarDesc* desc = vars.Find(grad);
    if (desc == nullptr) continue;
    Gradient g{var.name(), grad, -1, DeclaredBytes(*desc)};
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      // A merge across processes rewrites the finished gradient: the merge
      // between places goes before it, after the gradient's last computation.
      if (op.type() == kProcessAllreduceOp) continue;
      if (op.role() == proto::ROLE_BACKWARD && Writes(op, grad)) g.last_write = i;
    }
    if (g.last_write >= 0) grads.push_back(std::move(g));
  }
  std::stable_sort(grads.begin(), grads.end(), [](const Gradient& a, const Gradient& b) {
    return a.last_write < b.last_write;
  });
  return grads;
}

// Consecutive small gradients share a bucket of up to fuse_bytes; large ones go alone.
std::vector<std::vector<Gradient>> Buckets(const std::vector<Gradient>& grads, int64_t fuse_bytes) {
  std::vector<std::vector<Gradient>> buckets;
  std::vector<Gradient> open;
  int64_t open_bytes = 0;
  auto close = [&] {
    if (!open.empty()) buckets.push_back(std::move(open));
    open.clear();
    open_bytes = 0;
  };
  for (const Gradient& g : grads) {
    if (fuse_bytes <= 0 || g.bytes >= fuse_bytes) {
      buckets.push_back({g});
      continue;
    }
    open.push_back(g);
    open_bytes += g.bytes;
    if (open_bytes >= fuse_bytes) close();
  }
  close();
  // Issue order: a bucket goes when its last gradient is complete.
  auto position = [](const std::vector<Gradient>& bucket) {
    int p = -1;
    for (const Gradient& g : bucket) p = std::max(p, g.last_write);
    return p;
  };
  std::stable_sort(buckets.begin(), buckets.end(),
                   [&](const auto& a, const auto& b) { return position(a) < position(b); });
  return buckets;
}

// The owner of each parameter: the largest first, each to the least loaded place.
std::map<std::string, int> Owners(const std::vector<Gradient>& grads, int places) {
  std::vector<Gradient> by_size = grads;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const Gradient& a, const Gradient& b) { return a.bytes > b.bytes; });
  std::vector<int64_t> load(static_cast<size_t>(places), 0);
  std::map<std::string, int> owner;
  for (const Gradient& g : by_size) {
    const int p = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[g.param] = p;
    load[p] += g.bytes;
  }
  return owner;
}

// The place an optimize op runs on with kReduce: the owner of the first
// parameter (or parameter gradient) it writes, else reads; place 0 for the
// rest (the global-norm computation of gradient clipping).
int OwnerOf(const proto::OpDesc& op, const std::map<std::string, int>& owner) {
  auto find = [&](const google::protobuf::RepeatedPtrField<proto::Slot>& slots) -> int {
    for (const auto& slot : slots) {
      for (const auto& name : slot.vars()) {
        auto it = owner.find(name);
        if (it == owner.end() && name.size() > 5 && name.ends_with("@GRAD")) {
          it = owner.find(name.substr(0, name.size() - 5));
        }
        if (it != owner.end()) return it->second;
      }
    }
    return -1;
  };
  int p = find(op.outputs());
  if (p < 0) p = find(op.inputs());
  return p < 0 ? 0 : p;
}

// Ops to insert after each op of the block (by its index).
using OpsAfter = std::vector<std::vector<proto::OpDesc>>;

// Each bucket's collective, numbered in bucket order, after the last
// backward write of its gradients.
void AddMerges(const std::vector<std::vector<Gradient>>& buckets, bool reduce, OpsAfter* after) {
  for (size_t b = 0; b < buckets.size(); ++b) {
    proto::OpDesc merge;
    merge.set_type(reduce ? "reduce" : "allreduce");
    merge.set_role(proto::ROLE_BACKWARD);
    std::vector<std::string> names;
    int position = 0;
    for (const Gradient& g : buckets[b]) {
      names.push_back(g.grad);
      position = std::max(position, g.last_write);
    }
    SetInput(&merge, "X", names);
    SetOutput(&merge, "Out", names);
    SetAttr(&merge, "order", static_cast<int64_t>(b));
    (*after)[position].push_back(std::move(merge));
  }
}

// Declares the loss scale and multiplies the loss gradient seed (the first
// op of role loss-grad) by it, right after the seed. Returns whether the
// block has a seed.
bool AddLossScale(proto::BlockDesc* block, int block_index, const VarIndex& vars, OpsAfter* after) {
  for (int i = 0; i < block->ops_size(); ++i) {
    const proto::OpDesc& op = block->ops(i);
    if (op.role() != proto::ROLE_LOSS_GRAD) continue;
    const std::string loss_grad = OutputVar(op, "Out");
    const proto::VarDesc* desc = vars.Find(loss_grad);
    RILL_CHECK(desc != nullptr, kInvalidArgument, "block ", block_index, ", op ", i, " (",
               op.type(), "): the loss gradient \"", loss_grad, "\" is not declared");
    proto::VarDesc* scale = block->add_vars();
    scale->set_name(kLossScaleVar);
    scale->set_kind(proto::DENSE_TENSOR);
    scale->set_dtype(desc->dtype());
    scale->add_shape(1);
    scale->set_stop_gradient(true);
    proto::OpDesc mul;
    mul.set_type("elementwise_mul");
    mul.set_role(proto::ROLE_LOSS_GRAD);
    SetInput(&mul, "X", {loss_grad});
    SetInput(&mul, "Y", {kLossScaleVar});
    SetOutput(&mul, "Out", {loss_grad});
    (*after)[i].insert((*after)[i].begin(), std::move(mul));
    return true;
  }
  return false;
}

// The arena a planned program lives on. A 100k-op program copies into ~60 MB
// of small messages: the arena packs them into a few big blocks, on huge
// pages where the kernel has them (huge_pages.h; with 4 KB pages the copy
// cost 250 ms on the 2-core VM, 50 ms on huge pages). The first block fits
// about all of `program` (about 300 bytes per op or variable declared), so
// that small programs take little memory.
std::unique_ptr<google::protobuf::Arena> MakeProgramArena(const proto::ProgramDesc& program) {
  size_t entries = 0;
  for (const auto& block : program.blocks()) {
    entries += static_cast<size_t>(block.ops_size() + block.vars_size());
  }
  constexpr size_t kMaxBlock = size_t{32} << 20;
  size_t first = std::clamp<size_t>(entries * 300, 4096, kMaxBlock);
  if (first >= kHugePageBytes) {
    first = (first + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  }
  google::protobuf::ArenaOptions options;
  options.start_block_size = first;
  options.max_block_size = std::max(first, kMaxBlock);
  options.block_alloc = &AllocateHugePageBlock;
  options.block_dealloc = &FreeHugePageBlock;
  return std::make_unique<google::protobuf::Arena>(options);
}

}  // namespace

proto::ProgramDesc AddProcessAllreduce(const proto::ProgramDesc& program, int block_index,
                                       int64_t fuse_bytes, GradientCompression compression) {
  RILL_CHECK(block_index >= 0 && block_index < program.blocks_size(), kOutOfRange, "block ",
             block_index, " does not exist (the program has ", program.blocks_size(), ")");
  proto::ProgramDesc out = program;
  proto::BlockDesc* block = out.mutable_blocks(block_index);
  const VarIndex vars(program, block_index);
  const auto buckets = Buckets(ParameterGradients(program.blocks(block_index), vars), fuse_bytes);
  OpsAfter after(static_cast<size_t>(block->ops_size()));
  AddMerges(buckets, /*reduce=*/false, &after);
  google::protobuf::RepeatedPtrField<proto::OpDesc> ops;
  ops.Swap(block->mutable_ops());
  for (int i = 0; i < ops.size(); ++i) {
    *block->add_ops() = std::move(*ops.Mutable(i));
    for (auto& merge : after[static_cast<size_t>(i)]) {
      merge.set_type(kProcessAllreduceOp);
      SetAttr(&merge, "count", static_cast<int64_t>(buckets.size()));
      SetAttr(&merge, "compression", GradientCompressionName(compression));
      *block->add_ops() = std::move(merge);
    }
  }
  return out;
}

DataParallelPlan PlanDataParallel(const proto::ProgramDesc& program, int block_index, int places,
                                  const BuildStrategy& strategy) {
  RILL_CHECK(block_index >= 0 && block_index < program.blocks_size(), kOutOfRange, "block ",
             block_index, " does not exist (the program has ", program.blocks_size(), ")");
  RILL_CHECK(places >= 1, kInvalidArgument, "data parallelism needs at least one place, got ",
             places);
  DataParallelPlan plan;
  plan.arena_ = MakeProgramArena(program);
  plan.program_ = google::protobuf::Arena::CreateMessage<proto::ProgramDesc>(plan.arena_.get());
  *plan.program_ = program;
  plan.block_index = block_index;
  plan.places = places;
  plan.strategy = strategy;
  proto::BlockDesc* block = plan.program_->mutable_blocks(block_index);
  if (places == 1) {
    plan.ops.assign(static_cast<size_t>(block->ops_size()), OpPlacement{});
    return plan;
  }
  const VarIndex vars(program, block_index);
  const std::vector<Gradient> grads = ParameterGradients(program.blocks(block_index), vars);
  const auto buckets = Buckets(grads, strategy.fuse_bytes);
  const bool reduce = strategy.reduce == ReduceStrategy::kReduce;
  const std::map<std::string, int> owner = Owners(grads, places);

  // Rebuild the op list with the loss scale after the seed and each bucket's
  // collective after the last backward write of its gradients.
  OpsAfter after(static_cast<size_t>(block->ops_size()));
  AddMerges(buckets, reduce, &after);
  if (AddLossScale(block, block_index, vars, &after)) plan.loss_scale = kLossScaleVar;
  // The ops move (on one arena, a move is a swap), the merges join them.
  auto* ops = google::protobuf::Arena::Create<google::protobuf::RepeatedPtrField<proto::OpDesc>>(
      plan.arena_.get());
  ops->Swap(block->mutable_ops());
  for (int i = 0; i < ops->size(); ++i) {
    *block->add_ops() = std::move(*ops->Mutable(i));
    for (auto& extra : after[i]) *block->add_ops() = std::move(extra);
  }
  // sync_places_sum (sync_batch_norm's sums) is an allreduce of its variable
  // too. Every collective is numbered in program order, the order the places
  // issue them (the buckets' numbers stay as AddMerges gave them).
  int64_t order = 0;
  for (auto& op : *block->mutable_ops()) {
    if (op.type() == kSyncPlacesSumOp) op.set_type("allreduce");
    if (op.type() == "allreduce" || op.type() == "reduce") SetAttr(&op, "order", order++);
  }
  plan.collectives = static_cast<int>(order);

  for (const auto& op : block->ops()) {
    OpPlacement placement;
    if (op.type() == "allreduce" || op.type() == "reduce") {
      placement.kind = OpPlacement::kCollective;
    } else if (op.type() == kProcessAllreduceOp) {
      // Hierarchical: the places reduce a bucket into its one shared copy,
      // which one place then merges with the other processes, before the
      // optimizer reads it. With kAllReduce every place would hold a copy to
      // merge, and issue the process's collective once per place.
      RILL_CHECK(reduce, kUnimplemented, "block ", block_index, ": op \"", op.type(),
                 "\" merges across processes; with ", places,
                 " places per process it needs the reduce strategy (--strategy reduce): the "
                 "places reduce into one copy, which the process merges once");
      placement.kind = OpPlacement::kOnePlace;
      placement.place = OwnerOf(op, owner);
    } else if (reduce && op.role() == proto::ROLE_OPTIMIZE) {
      placement.kind = OpPlacement::kOnePlace;
      placement.place = OwnerOf(op, owner);
    }
    plan.ops.push_back(placement);
    if (placement.kind != OpPlacement::kEveryPlace) continue;
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) {
        const proto::VarDesc* desc = vars.Find(name);
        if (desc != nullptr && desc->persistable() && !desc->parameter()) {
          plan.place_state.insert(name);
        }
      }
    }
  }
  return plan;
}

}  // namespace rill
