#include "actors/executor/gradient_merge.h"

#include <algorithm>

#include "runtime/graph/gradient_compression.h"

namespace rill {
namespace {

// The part [begin, end) of `total` elements that place `p` of `places` reduces.
void ChunkRange(int64_t total, int p, int places, int64_t* begin, int64_t* end) {
  *begin = total * p / places;
  *end = total * (p + 1) / places;
}

}  // namespace

GradientMerger::GradientMerger(int places, const BuildStrategy& build, size_t merges)
    : places_(places), build_(build), residuals_(merges) {}

bool GradientMerger::Compresses(const Variable& gradient) const {
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

std::vector<float>& GradientMerger::Residual(const GradientMerge& merge, size_t m, int place,
                                             int64_t elements) {
  auto& residuals = residuals_[static_cast<size_t>(merge.order)];
  const size_t n = static_cast<size_t>(places_);
  if (residuals.size() < merge.members.size() * n) residuals.resize(merge.members.size() * n);
  std::vector<float>& r = residuals[m * n + static_cast<size_t>(place)];
  if (elements >= 0 && static_cast<int64_t>(r.size()) != elements) {
    r.assign(static_cast<size_t>(elements), 0.0f);
  }
  return r;
}

void GradientMerger::Prepare(const GradientMerge& merge, MergeState& state, bool allocate_shared) {
  const int n = places_;
  state.raw_bytes = state.merged_bytes = 0;
  for (size_t m = 0; m < merge.members.size(); ++m) {
    const Variable& first = *state.vars[m * (n + 1)];
    state.sparse[m] = first.holds_selected_rows() ? 1 : 0;
    state.compressed[m] = Compresses(first) ? 1 : 0;
    if (state.sparse[m] || !first.tensor().initialized()) continue;  // counted by MergeSparse
    const int64_t numel = first.tensor().numel();
    state.raw_bytes += n * static_cast<int64_t>(first.tensor().bytes());
    state.merged_bytes +=
        n * (state.compressed[m] ? CompressedBytes(build_.gradient_compression, numel)
                                 : static_cast<int64_t>(first.tensor().bytes()));
    if (state.compressed[m]) {
      for (int p = 0; p < n; ++p) Residual(merge, m, p, numel);  // sized before the chunks run
    }
  }
  if (!merge.reduce || !allocate_shared) return;
  // The shared copies the chunks write into, shaped like the places' gradients.
  for (size_t m = 0; m < merge.members.size(); ++m) {
    const Tensor& local = state.vars[m * (n + 1)]->tensor();
    if (state.sparse[m] || !local.initialized()) continue;  // merged whole / reported by the chunk
    state.vars[m * (n + 1) + n]->mutable_tensor()->Allocate(local.dtype(), local.shape());
  }
}

const Tensor& GradientMerger::CheckGradientsAlike(const GradientMerge& merge,
                                                  const MergeState& state, size_t m) const {
  const int n = places_;
  const Tensor& first = state.vars[m * (n + 1)]->tensor();
  RILL_CHECK(first.initialized(), kInvalidArgument, "gradient \"", merge.members[m],
             "\" holds no value on place 0");
  for (int q = 1; q < n; ++q) {
    const Tensor& other = state.vars[m * (n + 1) + q]->tensor();
    RILL_CHECK(
        other.initialized() && other.shape() == first.shape() && other.dtype() == first.dtype(),
        kInvalidArgument, "gradient \"", merge.members[m], "\" is ",
        other.initialized() ? other.Describe() : std::string("empty"), " on place ", q, " but ",
        first.Describe(), " on place 0");
  }
  return first;
}

void GradientMerger::ReduceChunk(const GradientMerge& merge, MergeState& state, int place) {
  const int n = places_;
  int64_t total = 0;
  std::vector<int64_t> sizes;
  for (size_t m = 0; m < merge.members.size(); ++m) {
    if (state.sparse[m]) {  // merged whole, by place 0's chunk
      if (place == 0) MergeSparse(merge, state, m);
      sizes.push_back(0);
      continue;
    }
    const Tensor& first = CheckGradientsAlike(merge, state, m);
    sizes.push_back(first.numel());
    total += first.numel();
  }
  int64_t begin = 0, end = 0;
  ChunkRange(total, place, n, &begin, &end);
  int64_t offset = 0;
  for (size_t m = 0; m < merge.members.size(); ++m) {
    const int64_t lo = std::max(begin, offset) - offset;
    const int64_t hi = std::min(end, offset + sizes[m]) - offset;
    offset += sizes[m];
    if (lo >= hi) continue;
    Variable* const* place_vars = &state.vars[m * (n + 1)];
    if (state.compressed[m]) {
      MergeCompressed(merge, m, place_vars, lo, hi);
    } else {
      SumInPlaceOrder(merge, place_vars, lo, hi);
    }
  }
}

// [lo, hi) of one member: block by block, the places' values summed in place
// order (the same bits on every run), then written where the sum goes.
void GradientMerger::SumInPlaceOrder(const GradientMerge& merge, Variable* const* place_vars,
                                     int64_t lo, int64_t hi) const {
  const int n = places_;
  VisitFloatType(place_vars[0]->tensor().dtype(), [&]<class T>() {
    constexpr int64_t kBlock = 2048;
    T sum[kBlock];
    T* shared = merge.reduce ? place_vars[n]->mutable_tensor()->mutable_data<T>() : nullptr;
    for (int64_t b = lo; b < hi; b += kBlock) {
      const int64_t len = std::min(kBlock, hi - b);
      const T* first = place_vars[0]->tensor().data<T>() + b;
      for (int64_t i = 0; i < len; ++i) sum[i] = first[i];
      for (int q = 1; q < n; ++q) {
        const T* g = place_vars[q]->tensor().data<T>() + b;
        for (int64_t i = 0; i < len; ++i) sum[i] += g[i];
      }
      if (shared != nullptr) {
        std::copy(sum, sum + len, shared + b);
        continue;
      }
      for (int q = 0; q < n; ++q) {
        std::copy(sum, sum + len, place_vars[q]->mutable_tensor()->mutable_data<T>() + b);
      }
    }
  });
}

// [lo, hi) of member m: each place's values quantized with its feedback, in
// pieces on the member's 256-value grid, and what they read back summed in
// place order into every place's gradient (allreduce) or the shared copy.
void GradientMerger::MergeCompressed(const GradientMerge& merge, size_t m,
                                     Variable* const* place_vars, int64_t lo, int64_t hi) {
  const int n = places_;
  auto& residuals = residuals_[static_cast<size_t>(merge.order)];
  const GradientCompression kind = build_.gradient_compression;
  float* shared = merge.reduce ? place_vars[n]->mutable_tensor()->mutable_data<float>() : nullptr;
  float sum[kCompressionChunk], back[kCompressionChunk];
  for (int64_t b = lo; b < hi;) {
    const int64_t end = std::min(hi, (b / kCompressionChunk + 1) * kCompressionChunk);
    const int64_t len = end - b;
    for (int q = 0; q < n; ++q) {
      const float* g = place_vars[q]->tensor().data<float>() + b;
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
        std::copy(sum, sum + len, place_vars[q]->mutable_tensor()->mutable_data<float>() + b);
      }
    }
    b = end;
  }
}

// A sparse gradient (selected rows): the places' rows concatenated in place
// order, repeats summed, given to every place (allreduce) or the shared copy.
void GradientMerger::MergeSparse(const GradientMerge& merge, MergeState& state, size_t m) {
  const int n = places_;
  Variable* const* vars = &state.vars[m * (n + 1)];
  const bool compressed = state.compressed[m] != 0;
  std::vector<SelectedRows> quantized(compressed ? static_cast<size_t>(n) : 0);
  std::vector<const SelectedRows*> parts;
  for (int q = 0; q < n; ++q) {
    RILL_CHECK(vars[q]->holds_selected_rows(), kInvalidArgument, "gradient \"", merge.members[m],
               "\" holds selected rows on place 0 but not on place ", q);
    const SelectedRows& given = vars[q]->selected_rows();
    const int64_t row_bytes = static_cast<int64_t>(given.rows.size() * sizeof(int64_t));
    state.raw_bytes += static_cast<int64_t>(given.value.bytes()) + row_bytes;
    if (!compressed) {
      state.merged_bytes += static_cast<int64_t>(given.value.bytes()) + row_bytes;
      parts.push_back(&given);
      continue;
    }
    SelectedRows& part = quantized[static_cast<size_t>(q)];
    part = given.Merged();  // each row once: its residual is added once
    std::vector<float>& residual = Residual(merge, m, q, -1);
    const QuantizedValues codes =
        QuantizeRowsWithFeedback(&part, &residual, build_.gradient_compression);
    Dequantize(codes, part.value.mutable_data<float>());
    state.merged_bytes += codes.bytes() + static_cast<int64_t>(part.rows.size() * sizeof(int64_t));
    parts.push_back(&part);
  }
  SelectedRows merged = MergeSelectedRows(parts);
  if (merge.reduce) {
    *vars[n]->mutable_selected_rows() = std::move(merged);
    return;
  }
  // Every place gets values of its own: tensors copy shallowly, and an op
  // that updates its gradient in place must not change another place's.
  for (int q = 1; q < n; ++q) {
    SelectedRows& copy = *vars[q]->mutable_selected_rows();
    copy = merged;
    copy.value = merged.value.Clone();
  }
  *vars[0]->mutable_selected_rows() = std::move(merged);
}

}  // namespace rill
