// The trainer's main program: what runs outside the placeable block stays;
// the placeable_block op becomes, in order, a split per sliced gradient, a
// send per gradient or slice, a recv per parameter or slice, a concat per
// sliced parameter (actors/distributed/distributed.md).
#include <map>
#include <utility>
#include <vector>

#include "rill/op_desc.h"
#include "runtime/transpile/transpiler_plan.h"

namespace rill {
namespace {

// Declares `name` in `block` like `like`, with `shape`.
void DeclareLike(proto::BlockDesc* block, const proto::VarDesc& like, const std::string& name,
                 const std::vector<int64_t>& shape) {
  if (FindLocalVarDesc(block, name) != nullptr) return;
  proto::VarDesc* var = block->add_vars();
  *var = like;
  var->set_name(name);
  var->clear_shape();
  for (int64_t d : shape) var->add_shape(d);
}

// The units of each sliced parameter, grouped: param -> unit indices.
std::vector<std::vector<size_t>> SlicedGroups(const TranspilePlan& plan) {
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    if (plan.units[i].placed.slice < 0) continue;
    if (plan.units[i].placed.slice == 0) groups.emplace_back();
    groups.back().push_back(i);
  }
  return groups;
}

// The units each send op pushes: per server, consecutive units (in update
// order) up to options.send_fuse_bytes, in the order their buckets fill.
std::vector<std::vector<size_t>> SendBuckets(const TranspilePlan& plan) {
  std::vector<std::vector<size_t>> buckets;
  std::map<int, std::pair<std::vector<size_t>, int64_t>> open;  // by server: units, bytes
  for (size_t i = 0; i < plan.units.size(); ++i) {
    const PlacedParameter& p = plan.units[i].placed;
    // A gradient declared without a type counts as float32.
    const proto::VarDesc* grad = plan.Declaration(plan.units[i].update->grad);
    const bool typed = grad != nullptr && grad->dtype() != proto::DT_INVALID;
    const int64_t bytes = p.elements * static_cast<int64_t>(SizeOf(typed ? FromProto(grad->dtype())
                                                                         : DataType::kFloat32));
    auto& [units, filled] = open[p.server];
    if (!units.empty() && filled + bytes > plan.options.send_fuse_bytes) {
      buckets.push_back(std::move(units));
      units.clear();
      filled = 0;
    }
    units.push_back(i);
    filled += bytes;
  }
  for (auto& [server, bucket] : open) {
    if (!bucket.first.empty()) buckets.push_back(std::move(bucket.first));
  }
  return buckets;
}

}  // namespace

proto::ProgramDesc BuildTrainerMain(const TranspilePlan& plan) {
  proto::ProgramDesc program = *plan.main;
  proto::BlockDesc* block = program.mutable_blocks(plan.op_block);
  const proto::OpDesc placeable = block->ops(plan.op_index);
  auto endpoint = [&](const PlacedUpdate& unit) {
    return plan.options.pservers[static_cast<size_t>(unit.placed.server)];
  };
  auto new_op = [&](const char* type) {
    proto::OpDesc op;
    op.set_type(type);
    op.set_role(placeable.role());
    return op;
  };
  const auto groups = SlicedGroups(plan);
  std::vector<proto::OpDesc> ops;
  for (const auto& group : groups) {
    const PlacedUpdate& first = plan.units[group.front()];
    const std::string& grad = first.update->grad;
    const proto::VarDesc* grad_desc = plan.Declaration(grad);
    const proto::VarDesc* param_desc = plan.Declaration(first.update->param);
    std::vector<std::string> grad_slices, param_slices;
    std::vector<int64_t> rows;
    for (size_t i : group) {
      const PlacedParameter& p = plan.units[i].placed;
      grad_slices.push_back(p.grad);
      param_slices.push_back(p.var);
      rows.push_back(p.shape[0]);
      DeclareLike(block, *grad_desc, p.grad, p.shape);
      DeclareLike(block, *param_desc, p.var, p.shape);
      // A slice is a plain variable of the trainer: it lives for one step.
      FindLocalVarDesc(block, p.var)->set_persistable(false);
      FindLocalVarDesc(block, p.var)->set_parameter(false);
    }
    proto::OpDesc split = new_op("split");
    SetInput(&split, "X", {grad});
    SetOutput(&split, "Out", grad_slices);
    SetAttr(&split, "axis", 0);
    SetAttr(&split, "sections", rows);
    ops.push_back(std::move(split));
  }
  for (const auto& bucket : SendBuckets(plan)) {
    proto::OpDesc send = new_op("send");
    std::vector<std::string> grads;
    for (size_t i : bucket) grads.push_back(plan.units[i].placed.grad);
    SetInput(&send, "X", grads);
    SetAttr(&send, "endpoint", endpoint(plan.units[bucket.front()]));
    ops.push_back(std::move(send));
  }
  for (const PlacedUpdate& unit : plan.units) {
    proto::OpDesc recv = new_op("recv");
    SetOutput(&recv, "Out", {unit.placed.var});
    SetAttr(&recv, "endpoint", endpoint(unit));
    ops.push_back(std::move(recv));
  }
  for (const auto& group : groups) {
    std::vector<std::string> param_slices;
    for (size_t i : group) param_slices.push_back(plan.units[i].placed.var);
    proto::OpDesc concat = new_op("concat");
    SetInput(&concat, "X", param_slices);
    SetOutput(&concat, "Out", {plan.units[group.front()].update->param});
    SetAttr(&concat, "axis", 0);
    ops.push_back(std::move(concat));
  }

  google::protobuf::RepeatedPtrField<proto::OpDesc> old;
  old.Swap(block->mutable_ops());
  for (int i = 0; i < old.size(); ++i) {
    if (i != plan.op_index) {
      *block->add_ops() = std::move(*old.Mutable(i));
      continue;
    }
    for (auto& op : ops) *block->add_ops() = std::move(op);
  }
  RemoveBlocks(&program, BlockTree(program, plan.block()));
  return program;
}

}  // namespace rill
