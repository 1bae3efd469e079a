// The gradient-merging ops data parallelism inserts (runtime/graph/data_parallel.h).
// They have no kernel: the actor executor runs them as collectives, a barrier
// over the places followed by a chunked reduction; the reference executor
// reports that it cannot run them.
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void SameShapesAsInputs(ShapeContext& ctx) {
  for (int i = 0; i < ctx.InputCount("X"); ++i) {
    ctx.SetOutput("Out", ctx.InputShape("X", i), ctx.InputType("X", i), i);
  }
}

OpSchema CollectiveSchema(const char* type, const char* doc) {
  return OpSchema(type)
      .Doc(doc)
      .Input("X", "each place's gradients", kDuplicable)
      .Output("Out", "the merged gradients (the same variables)", kDuplicable)
      .Attr("order", 0, "position in the order every place issues its collectives", AtLeast(0))
      .InferShape(SameShapesAsInputs);
}

}  // namespace

RILL_REGISTER_OP(allreduce, CollectiveSchema("allreduce",
                                             "Sums X over all places; every place gets the sum."));
RILL_REGISTER_OP(reduce,
                 CollectiveSchema("reduce", "Sums X over all places into the one shared copy."));

}  // namespace rill
