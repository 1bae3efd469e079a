// Gradient merges across places. A collective node's countdown is the
// barrier: it reaches zero when the gradient is ready on every place. The
// merge then runs as one chunk task per place, each reducing one contiguous
// part of the (bucketed) gradients over all places in place order, so the sum
// is the same bits run after run and on every place. Chunks go to the front
// of their place's stream (a merge before compute, so that communication
// overlaps the rest of backward), and every place runs its chunks in the
// collectives' global order. The last chunk to finish completes the node.
//
// With gradient compression, each place's contribution to a member is first
// quantized with that place's error feedback (QuantizeWithFeedback, in pieces
// on the member's 256-value grid cut by the chunk ranges) and the chunk sums
// what the codes read back; selected rows are compressed whole by place 0's
// chunk, each place's rows merged first so that its residual row is added once.
#include <algorithm>

#include "actors/executor/actor_graph.h"
#include "actors/trace/trace_context.h"
#include "runtime/graph/gradient_compression.h"

namespace rill {
namespace {

// The part [begin, end) of `total` elements that place `p` of `places` reduces.
void ChunkRange(int64_t total, int p, int places, int64_t* begin, int64_t* end) {
  *begin = total * p / places;
  *end = total * (p + 1) / places;
}

}  // namespace

// A sparse gradient (selected rows): the places' rows concatenated in place
// order, repeats summed, given to every place (allreduce) or the shared copy.
void ActorGraph::MergeSparse(const Collective& c, size_t member, Slot& slot) {
  const int n = places();
  Variable* const* vars = &slot.collective_vars[c.order][member * (n + 1)];
  const bool compressed = slot.collective_compressed[c.order][member] != 0;
  const GradientCompression kind = build_.gradient_compression;
  std::vector<SelectedRows> quantized(compressed ? static_cast<size_t>(n) : 0);
  std::vector<const SelectedRows*> parts;
  auto& [raw_bytes, merged_bytes] = slot.collective_bytes[static_cast<size_t>(c.order)];
  for (int q = 0; q < n; ++q) {
    RILL_CHECK(vars[q]->holds_selected_rows(), kInvalidArgument, "gradient \"", c.members[member],
               "\" holds selected rows on place 0 but not on place ", q);
    const SelectedRows& given = vars[q]->selected_rows();
    const int64_t row_bytes = static_cast<int64_t>(given.rows.size() * sizeof(int64_t));
    raw_bytes += static_cast<int64_t>(given.value.bytes()) + row_bytes;
    if (!compressed) {
      merged_bytes += static_cast<int64_t>(given.value.bytes()) + row_bytes;
      parts.push_back(&given);
      continue;
    }
    SelectedRows& part = quantized[static_cast<size_t>(q)];
    part = given.Merged();  // each row once: its residual is added once
    std::vector<float>& residual = Residual(c, member, q, -1);
    const QuantizedValues codes = QuantizeRowsWithFeedback(&part, &residual, kind);
    Dequantize(codes, part.value.mutable_data<float>());
    merged_bytes += codes.bytes() + static_cast<int64_t>(part.rows.size() * sizeof(int64_t));
    parts.push_back(&part);
  }
  SelectedRows merged = MergeSelectedRows(parts);
  if (c.reduce) {
    *vars[n]->mutable_selected_rows() = std::move(merged);
    return;
  }
  for (int q = 0; q < n; ++q) *vars[q]->mutable_selected_rows() = merged;
}

bool ActorGraph::Compresses(const Variable& gradient) const {
  if (build_.gradient_compression == GradientCompression::kNone) return false;
  if (gradient.holds_selected_rows()) {
    const SelectedRows& rows = gradient.selected_rows();
    if (!rows.value.initialized() || rows.value.dtype() != DataType::kFloat32) return false;
    const int64_t width = rows.rows.empty() ? 0 : rows.value.numel() / rows.value.dim(0);
    return rows.height * width >= build_.compression_min_elements;
  }
  const Tensor& t = gradient.tensor();
  return t.initialized() && t.dtype() == DataType::kFloat32 &&
         t.numel() >= build_.compression_min_elements;
}

std::vector<float>& ActorGraph::Residual(const Collective& c, size_t member, int place,
                                         int64_t elements) {
  auto& residuals = merge_residuals_[static_cast<size_t>(c.order)];
  const size_t n = static_cast<size_t>(places());
  if (residuals.size() < c.members.size() * n) residuals.resize(c.members.size() * n);
  std::vector<float>& r = residuals[member * n + static_cast<size_t>(place)];
  if (elements >= 0 && static_cast<int64_t>(r.size()) != elements) {
    r.assign(static_cast<size_t>(elements), 0.0f);
  }
  return r;
}

// [lo, hi) of member m: each place's values quantized with its feedback, in
// pieces on the member's 256-value grid, and what they read back summed in
// place order into every place's gradient (allreduce) or the shared copy.
void ActorGraph::MergeCompressed(const Collective& c, size_t m, Variable* const* places_vars,
                                 int64_t lo, int64_t hi) {
  const int n = places();
  auto& residuals = merge_residuals_[static_cast<size_t>(c.order)];
  const GradientCompression kind = build_.gradient_compression;
  float* shared = c.reduce ? places_vars[n]->mutable_tensor()->mutable_data<float>() : nullptr;
  float sum[kCompressionChunk], back[kCompressionChunk];
  for (int64_t b = lo; b < hi;) {
    const int64_t end = std::min(hi, (b / kCompressionChunk + 1) * kCompressionChunk);
    const int64_t len = end - b;
    for (int q = 0; q < n; ++q) {
      const float* g = places_vars[q]->tensor().data<float>() + b;
      float* residual = residuals[m * static_cast<size_t>(n) + static_cast<size_t>(q)].data() + b;
      QuantizeWithFeedback(g, residual, q == 0 ? sum : back, len, kind, kCompressionChunk);
      if (q > 0) {
        for (int64_t i = 0; i < len; ++i) sum[i] += back[i];
      }
    }
    if (shared != nullptr) {
      std::copy(sum, sum + len, shared + b);
    } else {
      for (int q = 0; q < n; ++q) {
        std::copy(sum, sum + len, places_vars[q]->mutable_tensor()->mutable_data<float>() + b);
      }
    }
    b = end;
  }
}

void ActorGraph::IssueCollective(Task* task, Slot& slot, uint32_t generation) {
  const Collective& c = collectives_[nodes_[task->node].collective];
  if (!nccl_ && !device_streams_.empty()) WaitForGradients(c, slot);
  if (slot.backward_pending.load(std::memory_order_relaxed) > 0) {
    slot.overlapped.fetch_add(1, std::memory_order_relaxed);
  }
  if (nccl_) return MergeOnNccl(task, c, slot, generation);
  if (slot.traced) TraceChunkMessages(c, slot);
  const int n = places();
  const auto& vars = slot.collective_vars[c.order];
  auto& sparse = slot.collective_sparse[c.order];
  auto& compressed = slot.collective_compressed[c.order];
  auto& [raw_bytes, merged_bytes] = slot.collective_bytes[static_cast<size_t>(c.order)];
  raw_bytes = merged_bytes = 0;
  for (size_t m = 0; m < c.members.size(); ++m) {
    const Variable& first = *vars[m * (n + 1)];
    sparse[m] = first.holds_selected_rows() ? 1 : 0;
    compressed[m] = Compresses(first) ? 1 : 0;
    if (sparse[m] || !first.tensor().initialized()) continue;  // counted by MergeSparse
    const int64_t numel = first.tensor().numel();
    raw_bytes += n * static_cast<int64_t>(first.tensor().bytes());
    merged_bytes += n * (compressed[m] ? CompressedBytes(build_.gradient_compression, numel)
                                       : static_cast<int64_t>(first.tensor().bytes()));
    if (compressed[m]) {
      for (int p = 0; p < n; ++p) Residual(c, m, p, numel);  // sized before the chunks run
    }
  }
  if (c.reduce && !slot.cancelled.load(std::memory_order_relaxed)) {
    // The shared copies the chunks write into, shaped like the places' gradients.
    for (size_t m = 0; m < c.members.size(); ++m) {
      const Tensor& local = vars[m * (n + 1)]->tensor();
      if (sparse[m] || !local.initialized()) continue;  // merged whole / reported by the chunk
      vars[m * (n + 1) + n]->mutable_tensor()->Allocate(local.dtype(), local.shape());
    }
  }
  slot.chunk_countdowns[c.order].Reset(generation, static_cast<uint32_t>(n));
  for (int p = 0; p < n; ++p) {
    Task* chunk = &slot.chunks[static_cast<size_t>(c.order * n + p)];
    chunk->countdown.Reset(generation, 0);
    SubmitChunkInOrder(slot, p, c.order, chunk);
  }
}

void ActorGraph::SubmitChunkInOrder(Slot& slot, int place, int order, Task* chunk) {
  PlaceOrder& po = *slot.orders[place];
  {
    std::lock_guard<std::mutex> lock(po.mutex);
    if (order != po.next) {
      po.waiting[order] = chunk;  // a merge issued earlier on every place runs first
      return;
    }
  }
  streams_[chunk->stream]->SubmitUrgent(chunk);
}

const Tensor& ActorGraph::CheckGradientsAlike(const Collective& c, size_t m,
                                              const Slot& slot) const {
  const int n = places();
  const auto& vars = slot.collective_vars[c.order];
  const Tensor& first = vars[m * (n + 1)]->tensor();
  RILL_CHECK(first.initialized(), kInvalidArgument, "gradient \"", c.members[m],
             "\" holds no value on place 0");
  for (int q = 1; q < n; ++q) {
    const Tensor& other = vars[m * (n + 1) + q]->tensor();
    RILL_CHECK(
        other.initialized() && other.shape() == first.shape() && other.dtype() == first.dtype(),
        kInvalidArgument, "gradient \"", c.members[m], "\" is ",
        other.initialized() ? other.Describe() : std::string("empty"), " on place ", q, " but ",
        first.Describe(), " on place 0");
  }
  return first;
}

// Place chunk->place's part of a merge: every place's values of its range,
// summed in place order (compressed contributions quantized first).
void ActorGraph::ReduceChunk(Task* chunk, Slot& slot) {
  const int n = places();
  const int p = chunk->place;
  const Collective& c = collectives_[nodes_[chunk->node].collective];
  try {
    const auto& vars = slot.collective_vars[c.order];
    int64_t total = 0;
    std::vector<int64_t> sizes;
    for (size_t m = 0; m < c.members.size(); ++m) {
      if (slot.collective_sparse[c.order][m]) {  // merged whole, by place 0's chunk
        if (p == 0) MergeSparse(c, m, slot);
        sizes.push_back(0);
        continue;
      }
      const Tensor& first = CheckGradientsAlike(c, m, slot);
      sizes.push_back(first.numel());
      total += first.numel();
    }
    int64_t begin = 0, end = 0;
    ChunkRange(total, p, n, &begin, &end);
    int64_t offset = 0;
    for (size_t m = 0; m < c.members.size(); ++m) {
      const int64_t lo = std::max(begin, offset) - offset;
      const int64_t hi = std::min(end, offset + sizes[m]) - offset;
      offset += sizes[m];
      if (lo >= hi) continue;
      Variable* const* places_vars = &vars[m * (n + 1)];
      if (slot.collective_compressed[c.order][m]) {
        MergeCompressed(c, m, places_vars, lo, hi);
        continue;
      }
      VisitFloatType(places_vars[0]->tensor().dtype(), [&]<class T>() {
        // Block by block: sum the places' values in place order (the same
        // bits on every run), then write the sum where it goes.
        constexpr int64_t kBlock = 2048;
        T sum[kBlock];
        T* shared = c.reduce ? places_vars[n]->mutable_tensor()->mutable_data<T>() : nullptr;
        for (int64_t b = lo; b < hi; b += kBlock) {
          const int64_t len = std::min(kBlock, hi - b);
          const T* first = places_vars[0]->tensor().data<T>() + b;
          for (int64_t i = 0; i < len; ++i) sum[i] = first[i];
          for (int q = 1; q < n; ++q) {
            const T* g = places_vars[q]->tensor().data<T>() + b;
            for (int64_t i = 0; i < len; ++i) sum[i] += g[i];
          }
          if (shared != nullptr) {
            std::copy(sum, sum + len, shared + b);
            continue;
          }
          for (int q = 0; q < n; ++q) {
            T* g = places_vars[q]->mutable_tensor()->mutable_data<T>() + b;
            std::copy(sum, sum + len, g);
          }
        }
      });
    }
  } catch (const Error& e) {
    FailIteration(slot, chunk->node, e);
  }
}

void ActorGraph::RunChunk(Task* chunk, Stream& stream) {
  Slot& slot = *slots_[chunk->slot];
  const uint32_t generation = chunk->countdown.generation();
  if (generation != slot.generation.load(std::memory_order_acquire)) return;  // left by an abort
  const int n = places();
  const int p = chunk->place;
  const Collective& c = collectives_[nodes_[chunk->node].collective];
  // This place's next merge may queue behind this one now.
  Task* next = nullptr;
  {
    PlaceOrder& po = *slot.orders[p];
    std::lock_guard<std::mutex> lock(po.mutex);
    po.next = c.order + 1;
    if (po.next < static_cast<int>(po.waiting.size())) std::swap(next, po.waiting[po.next]);
  }
  if (next != nullptr) streams_[next->stream]->SubmitUrgent(next);
  const bool traced = slot.traced;  // the slot may be reused once the last chunk completes
  const int64_t began = traced ? TraceRecorder::Now() : 0;
  if (!slot.cancelled.load(std::memory_order_relaxed)) {
    stream.SetRunning(chunk->node);
    if (!LaunchChunk(chunk, c, slot)) ReduceChunk(chunk, slot);
    stream.SetRunning(-1);
    if (traced) {
      TraceSpan(TraceEventKind::kKernel, trace_chunk_lanes_[static_cast<size_t>(c.order * n + p)],
                c.node, stream.index_in_place(), began, slot);
    }
  }
  stream.CountExecuted();
  if (slot.chunk_countdowns[c.order].Arrive(generation) == Countdown::Arrival::kReady) {
    if (traced) {
      TraceSpan(TraceEventKind::kCollective, trace_lane(c.node), c.node, -1,
                slot.collective_issue_ns[static_cast<size_t>(c.order)], slot,
                slot.collective_bytes[static_cast<size_t>(c.order)].second,
                slot.collective_bytes[static_cast<size_t>(c.order)].first);
    }
    Complete(&slot.tasks[c.node], slot, generation, &stream);
  }
  if (traced) CurrentTrace() = {};
}

}  // namespace rill
