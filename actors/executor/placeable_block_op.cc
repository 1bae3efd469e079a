// placeable_block: a block the distribute transpiler may move to parameter
// servers (actors/distributed/distributed.md). In one process it runs its sub-block once,
// in the enclosing scope, so a program computes the same with or without one.
#include <memory>

#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void PlaceableBlockKernel(KernelContext& ctx) {
  const int block = BlockAttr(ctx.op(), "sub_block");
  // Locals of the block (a decayed learning rate) live in a scope of their
  // own; everything else is the enclosing scope's, shared by name. Shared: a
  // go block started in the block may outlive this op.
  std::shared_ptr<Scope> local = Scope::MakeLocal(ctx.scope());
  Executor executor(ctx.place());
  auto body = executor.PrepareSubBlock(ctx.run(), local.get(), block);
  executor.Run(*body);
}

}  // namespace

RILL_REGISTER_OP(
    placeable_block,
    OpSchema("placeable_block")
        .Doc("Runs sub_block once, in the enclosing scope. The block's placement says where it "
             "may run when the program is split over processes: the distribute transpiler "
             "replaces this op by send/recv and moves the block's ops to parameter servers.")
        .Input("X", "variables the block reads from the rest of the step (documentation)",
               kOptional | kDuplicable | kNoGradient)
        .Output("Out", "variables the block writes for the rest of the step (documentation)",
                kOptional | kDuplicable | kNoGradient)
        .RequiredAttr("sub_block", AttrType::kBlock, "the block to run")
        .CpuKernel(PlaceableBlockKernel));

}  // namespace rill
