// process_allreduce: the cross-process gradient merge of collective data
// parallelism (AddProcessAllreduce in runtime/graph/data_parallel.h inserts
// it after the last backward write of each bucket of gradients). It runs as
// an op actor: the bucket's dense gradients are packed into one buffer per
// dtype, summed over the ranks by the process group (Gloo's ring allreduce),
// divided by the world size and written back, on the CollectiveSequence's
// thread and in the bucket's global order, so that no executor thread waits
// on the network. With compression the float32 values cross as int8 or int4
// codes (an allgather of every rank's codes, summed in rank order).
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
#include "runtime/graph/gradient_compression.h"

namespace rill {
namespace {

// The values of `tensors` (all of type T) one after the other.
template <typename T>
std::vector<T> Pack(const std::vector<Tensor*>& tensors, size_t total) {
  std::vector<T> packed(total);
  size_t at = 0;
  for (const Tensor* t : tensors) {
    const size_t n = static_cast<size_t>(t->numel());
    if (n > 0) std::memcpy(packed.data() + at, t->data<T>(), n * sizeof(T));
    at += n;
  }
  return packed;
}

// tensors = packed * scale, in order.
template <typename T>
void UnpackScaled(const T* packed, T scale, const std::vector<Tensor*>& tensors) {
  size_t at = 0;
  for (Tensor* t : tensors) {
    T* data = t->mutable_data<T>();
    const size_t n = static_cast<size_t>(t->numel());
    for (size_t i = 0; i < n; ++i) data[i] = packed[at + i] * scale;
    at += n;
  }
}

size_t TotalValues(const std::vector<Tensor*>& tensors) {
  size_t total = 0;
  for (const Tensor* t : tensors) total += static_cast<size_t>(t->numel());
  return total;
}

// Sums `tensors` (all of type T) over the ranks and divides by the world size.
template <typename T>
void MeanOverRanks(ProcessGroup& group, const std::vector<Tensor*>& tensors) {
  const size_t total = TotalValues(tensors);
  const T scale = T(1) / static_cast<T>(group.world_size());
  if (tensors.size() == 1) {
    T* data = tensors[0]->mutable_data<T>();
    group.AllreduceSum(data, total);
    for (size_t i = 0; i < total; ++i) data[i] *= scale;
    return;
  }
  std::vector<T> packed = Pack<T>(tensors, total);
  group.AllreduceSum(packed.data(), total);
  UnpackScaled(packed.data(), scale, tensors);
}

// The mean over the ranks of float32 `tensors`, sent as codes: each rank
// quantizes its gradients plus its residual (error feedback: what the codes
// dropped, kept for its next step), the ranks gather each other's scales and
// codes (a rank's bytes follow from the value count, so they are the same on
// every rank), and every rank reads every rank's codes back and sums them in
// rank order: the same bits on every rank. A rank sends 1/4 (int8) or 1/8
// (int4) of the float32 bytes, plus a scale per 256 values.
void CompressedMeanOverRanks(ProcessGroup& group, const std::vector<Tensor*>& tensors,
                             GradientCompression kind, std::vector<float>* residual) {
  const size_t total = TotalValues(tensors);
  if (total == 0) return;
  std::vector<float> packed = Pack<float>(tensors, total);
  if (residual->size() != total) residual->assign(total, 0.0f);
  const QuantizedValues mine =
      QuantizeWithFeedback(packed.data(), residual->data(), static_cast<int64_t>(total), kind);
  const size_t scale_bytes = mine.scales.size() * sizeof(float);
  const size_t rank_bytes = scale_bytes + mine.codes.size();
  std::vector<char> sent(rank_bytes),
      gathered(rank_bytes * static_cast<size_t>(group.world_size()));
  std::memcpy(sent.data(), mine.scales.data(), scale_bytes);
  std::memcpy(sent.data() + scale_bytes, mine.codes.data(), mine.codes.size());
  group.Allgather(sent.data(), rank_bytes, gathered.data());

  std::vector<float> sum(total, 0.0f), part(total);
  QuantizedValues theirs = mine;  // kind, count, chunk; scales and codes per rank below
  for (int r = 0; r < group.world_size(); ++r) {
    const char* at = gathered.data() + static_cast<size_t>(r) * rank_bytes;
    std::memcpy(theirs.scales.data(), at, scale_bytes);
    theirs.codes.assign(at + scale_bytes, mine.codes.size());
    Dequantize(theirs, part.data());
    for (size_t i = 0; i < total; ++i) sum[i] += part[i];
  }
  UnpackScaled(sum.data(), 1.0f / static_cast<float>(group.world_size()), tensors);
}

class ProcessAllreduceActor : public OpActor {
 public:
  void Run(KernelContext& ctx, OpDone done) override {
    auto group = ProcessGroup::Find(*ctx.scope());
    auto sequence = CollectiveSequence::Find(*ctx.scope());
    const int64_t order = ctx.Attr<int64_t>("order");
    const int64_t count = ctx.Attr<int64_t>("count");
    const GradientCompression kind = ParseGradientCompression(ctx.Attr<std::string>("compression"));
    // The bucket's gradients by dtype, in member order.
    // As between places, only float32 gradients of kCompressionMinElements or
    // more are compressed: a small one's scales would cost about what it saves.
    auto floats = std::make_shared<std::vector<Tensor*>>();
    auto compressed = std::make_shared<std::vector<Tensor*>>();
    auto doubles = std::make_shared<std::vector<Tensor*>>();
    for (int i = 0; i < ctx.OutputCount("Out"); ++i) {
      const std::string& name = ctx.InputName("X", i);
      RILL_CHECK(!ctx.InputIsSelectedRows("X", i), kUnimplemented, "process_allreduce #", order,
                 ": the gradient \"", name,
                 "\" is selected rows; merging them across processes is not built yet");
      Tensor* t = ctx.Output("Out", i);
      if (t->dtype() == DataType::kFloat32) {
        const bool compress =
            kind != GradientCompression::kNone && t->numel() >= kCompressionMinElements;
        (compress ? compressed : floats)->push_back(t);
      } else if (t->dtype() == DataType::kFloat64) {
        doubles->push_back(t);
      } else {
        Fail(ErrorCode::kUnimplemented, "process_allreduce #", order, ": the gradient \"", name,
             "\" is ", DataTypeName(t->dtype()), "; only float32 and float64 are merged");
      }
    }
    sequence->Submit(
        order, count,
        [group, floats, compressed, doubles, kind, residual = residual_] {
          if (!floats->empty()) MeanOverRanks<float>(*group, *floats);
          if (!compressed->empty()) {
            CompressedMeanOverRanks(*group, *compressed, kind, residual.get());
          }
          if (!doubles->empty()) MeanOverRanks<double>(*group, *doubles);
        },
        std::move(done));
  }

 private:
  // This rank's error feedback for the bucket's float32 values (compressed
  // merges); touched only by the sequence's thread, one step at a time.
  std::shared_ptr<std::vector<float>> residual_ = std::make_shared<std::vector<float>>();
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
                     .Attr("compression", "none",
                           "float32 values sent whole (none) or as int8 or int4 codes, with this "
                           "rank's error feedback; float64 values are sent whole",
                           OneOf({"none", "int8", "int4"}))
                     .InferShape(SameShapesAsInputs));

}  // namespace rill
