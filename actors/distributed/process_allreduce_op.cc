// process_allreduce: the cross-process gradient merge of collective data
// parallelism (AddProcessAllreduce in runtime/graph/data_parallel.h inserts
// it after the last backward write of each bucket of gradients). It runs as
// an op actor: the bucket's dense gradients are packed into one buffer per
// dtype, summed over the ranks by the process group (Gloo's ring allreduce),
// divided by the world size and written back, on the CollectiveSequence's
// thread and in the bucket's global order, so that no executor thread waits
// on the network.
#include <cstring>
#include <memory>
#include <vector>

#include "actors/distributed/collective_sequence.h"
#include "rill/error.h"
#include "rill/kernel_context.h"
#include "rill/op_actor.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/process_group.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

// Sums `tensors` (all of type T) over the ranks and divides by the world size.
template <typename T>
void MeanOverRanks(ProcessGroup& group, const std::vector<Tensor*>& tensors) {
  size_t total = 0;
  for (const Tensor* t : tensors) total += static_cast<size_t>(t->numel());
  if (tensors.size() == 1) {
    T* data = tensors[0]->mutable_data<T>();
    group.AllreduceSum(data, total);
    const T scale = T(1) / static_cast<T>(group.world_size());
    for (size_t i = 0; i < total; ++i) data[i] *= scale;
    return;
  }
  std::vector<T> packed(total);
  size_t at = 0;
  for (const Tensor* t : tensors) {
    const size_t n = static_cast<size_t>(t->numel());
    if (n > 0) std::memcpy(packed.data() + at, t->data<T>(), n * sizeof(T));
    at += n;
  }
  group.AllreduceSum(packed.data(), total);
  const T scale = T(1) / static_cast<T>(group.world_size());
  at = 0;
  for (Tensor* t : tensors) {
    T* data = t->mutable_data<T>();
    const size_t n = static_cast<size_t>(t->numel());
    for (size_t i = 0; i < n; ++i) data[i] = packed[at + i] * scale;
    at += n;
  }
}

class ProcessAllreduceActor : public OpActor {
 public:
  void Run(KernelContext& ctx, OpDone done) override {
    auto group = ProcessGroup::Find(*ctx.scope());
    auto sequence = CollectiveSequence::Find(*ctx.scope());
    const int64_t order = ctx.Attr<int64_t>("order");
    const int64_t count = ctx.Attr<int64_t>("count");
    // The bucket's gradients by dtype, in member order.
    auto floats = std::make_shared<std::vector<Tensor*>>();
    auto doubles = std::make_shared<std::vector<Tensor*>>();
    for (int i = 0; i < ctx.OutputCount("Out"); ++i) {
      const std::string& name = ctx.InputName("X", i);
      RILL_CHECK(!ctx.InputIsSelectedRows("X", i), kUnimplemented, "process_allreduce #", order,
                 ": the gradient \"", name,
                 "\" is selected rows; merging them across processes is not built yet");
      Tensor* t = ctx.Output("Out", i);
      if (t->dtype() == DataType::kFloat32) {
        floats->push_back(t);
      } else if (t->dtype() == DataType::kFloat64) {
        doubles->push_back(t);
      } else {
        Fail(ErrorCode::kUnimplemented, "process_allreduce #", order, ": the gradient \"", name,
             "\" is ", DataTypeName(t->dtype()), "; only float32 and float64 are merged");
      }
    }
    sequence->Submit(
        order, count,
        [group, floats, doubles] {
          if (!floats->empty()) MeanOverRanks<float>(*group, *floats);
          if (!doubles->empty()) MeanOverRanks<double>(*group, *doubles);
        },
        std::move(done));
  }
};

void SameShapesAsInputs(ShapeContext& ctx) {
  for (int i = 0; i < ctx.InputCount("X"); ++i) {
    ctx.SetOutput("Out", ctx.InputShape("X", i), ctx.InputType("X", i), i);
  }
}

const bool registered = [] {
  RegisterOpActor("process_allreduce", [] { return std::make_unique<ProcessAllreduceActor>(); });
  return true;
}();

}  // namespace

RILL_REGISTER_OP(process_allreduce,
                 OpSchema("process_allreduce")
                     .Doc("X = the mean of X over the ranks of the process group (rill train "
                          "--collective). The actor executor runs it as an op actor, in the "
                          "order every rank issues its collectives.")
                     .Input("X", "this rank's gradients", kDuplicable | kNoGradient)
                     .Output("Out", "the mean over the ranks (the same variables)",
                             kDuplicable | kNoGradient)
                     .Attr("order", 0, "position in the order every rank issues its collectives",
                           AtLeast(0))
                     .Attr("count", 1, "collectives per step", AtLeast(1))
                     .InferShape(SameShapesAsInputs));

}  // namespace rill
