// process_allreduce: the cross-process gradient merge of collective data
// parallelism (AddProcessAllreduce in runtime/graph/data_parallel.h inserts
// it after the last backward write of each bucket of gradients). It runs as
// an op actor: the bucket's dense gradients of each dtype are averaged over
// the ranks by the process group (ProcessGroup::AllreduceMean: gathered piece
// by piece into its staging buffers, no packed copy), on the CollectiveSequence's
// thread and in the bucket's global order, so that no executor thread waits
// on the network. With compression the float32 values cross as int8 or int4
// codes (an allgather of every rank's codes, summed in rank order). A sparse
// gradient (selected rows) is gathered whole: every rank's rows and values in
// rank order, repeats summed, divided by the world size.
#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "actors/distributed/collective_sequence.h"
#include "rill/error.h"
#include "rill/kernel_context.h"
#include "rill/op_actor.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/process_group.h"
#include "rill/selected_rows.h"
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

// `tensors` (all of type T) = their mean over the ranks.
template <typename T>
void MeanOverRanks(ProcessGroup& group, const std::vector<Tensor*>& tensors) {
  std::vector<std::span<T>> parts;
  for (Tensor* t : tensors) {
    parts.emplace_back(t->mutable_data<T>(), static_cast<size_t>(t->numel()));
  }
  group.AllreduceMean(std::span<const std::span<T>>(parts));
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

// What a rank's sparse gradient holds, gathered first so that every rank
// knows the others' sizes before the rows themselves cross.
struct SparseExtent {
  int64_t rows = 0;
  int64_t width = 0;   // values per row
  int64_t height = 0;  // rows of the dense tensor
  int64_t dtype = 0;
};

// `rows` = the mean over the ranks of every rank's `rows`: their rows and
// values concatenated in rank order, repeats summed (MergeSelectedRows), times
// 1 / world size. The same bits on every rank. The ranks gather their extents,
// then rows and values padded to the longest rank's count (Gloo's allgather
// takes the same bytes from every rank).
void SparseMeanOverRanks(ProcessGroup& group, const std::string& name, SelectedRows* rows) {
  const int world = group.world_size();
  Shape row_shape = rows->value.shape();
  RILL_CHECK(!row_shape.empty(), kInvalidArgument, "process_allreduce: the gradient \"", name,
             "\" holds selected rows with a value of rank 0");
  row_shape.erase(row_shape.begin());
  const SparseExtent mine{static_cast<int64_t>(rows->rows.size()), NumElements(row_shape),
                          rows->height, static_cast<int64_t>(rows->value.dtype())};
  std::vector<SparseExtent> extents(static_cast<size_t>(world));
  group.Allgather(&mine, sizeof mine, extents.data());
  int64_t longest = 0;
  for (int r = 0; r < world; ++r) {
    const SparseExtent& e = extents[static_cast<size_t>(r)];
    RILL_CHECK(e.width == mine.width && e.height == mine.height && e.dtype == mine.dtype,
               kInvalidArgument, "process_allreduce: the gradient \"", name, "\" is ", e.height,
               " rows of ", e.width, " values on rank ", r, " but ", mine.height, " rows of ",
               mine.width, " on rank ", group.rank(), " (or of another type)");
    longest = std::max(longest, e.rows);
  }
  const size_t value_bytes = SizeOf(rows->value.dtype());
  const size_t row_bytes = sizeof(int64_t) + static_cast<size_t>(mine.width) * value_bytes;
  const size_t rank_bytes = static_cast<size_t>(longest) * row_bytes;
  std::vector<char> sent(rank_bytes, 0), gathered(rank_bytes * static_cast<size_t>(world));
  const size_t my_rows = rows->rows.size();
  if (my_rows > 0) {
    std::memcpy(sent.data(), rows->rows.data(), my_rows * sizeof(int64_t));
    std::memcpy(sent.data() + static_cast<size_t>(longest) * sizeof(int64_t),
                rows->value.raw_data(), my_rows * (row_bytes - sizeof(int64_t)));
  }
  if (rank_bytes > 0) group.Allgather(sent.data(), rank_bytes, gathered.data());

  std::vector<SelectedRows> parts(static_cast<size_t>(world));
  std::vector<const SelectedRows*> given;
  for (int r = 0; r < world; ++r) {
    const int64_t count = extents[static_cast<size_t>(r)].rows;
    const char* at = gathered.data() + static_cast<size_t>(r) * rank_bytes;
    SelectedRows& part = parts[static_cast<size_t>(r)];
    part.height = mine.height;
    part.rows.resize(static_cast<size_t>(count));
    Shape shape = row_shape;
    shape.insert(shape.begin(), count);
    part.value = Tensor(rows->value.dtype(), shape);
    if (count > 0) {
      std::memcpy(part.rows.data(), at, static_cast<size_t>(count) * sizeof(int64_t));
      std::memcpy(part.value.raw_data(), at + static_cast<size_t>(longest) * sizeof(int64_t),
                  static_cast<size_t>(count) * (row_bytes - sizeof(int64_t)));
    }
    given.push_back(&part);
  }
  SelectedRows merged = MergeSelectedRows(given);
  VisitFloatType(merged.value.dtype(), [&]<class T>() {
    T* v = merged.value.template mutable_data<T>();
    const T scale = T(1) / static_cast<T>(world);
    for (int64_t i = 0; i < merged.value.numel(); ++i) v[i] *= scale;
  });
  *rows = std::move(merged);
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
    auto sparse = std::make_shared<std::vector<std::pair<std::string, SelectedRows*>>>();
    for (int i = 0; i < ctx.OutputCount("Out"); ++i) {
      const std::string& name = ctx.InputName("X", i);
      if (ctx.InputIsSelectedRows("X", i)) {
        // Sent whole: compression is for dense buckets (a sparse gradient is
        // already the rows a step touched).
        sparse->emplace_back(name, ctx.OutputRows("Out", i));
        continue;
      }
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
        [group, floats, compressed, doubles, sparse, kind, residual = residual_] {
          if (!floats->empty()) MeanOverRanks<float>(*group, *floats);
          if (!compressed->empty()) {
            CompressedMeanOverRanks(*group, *compressed, kind, residual.get());
          }
          if (!doubles->empty()) MeanOverRanks<double>(*group, *doubles);
          for (auto& [name, rows] : *sparse) SparseMeanOverRanks(*group, name, rows);
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

const bool process_allreduce_actor_registered = [] {
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
                           "rank's error feedback; float64 values and selected rows are sent "
                           "whole",
                           OneOf({"none", "int8", "int4"}))
                     .InferShape(SameShapesAsInputs));

}  // namespace rill
