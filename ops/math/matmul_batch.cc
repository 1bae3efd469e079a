// matmul's batch broadcasting (matmul_batch.h).
#include "ops/math/matmul_batch.h"

#include <algorithm>

#include "rill/error.h"

namespace rill {
namespace {

// Dim j of `batch` right-aligned to `rank` dims: 1 where `batch` has none.
int64_t AlignedDim(const Shape& batch, size_t rank, size_t j) {
  const size_t pad = rank - batch.size();
  return j < pad ? 1 : batch[j - pad];
}

// The broadcast of two batch dims; -1 is unknown (see the constructor).
bool Broadcast(int64_t a, int64_t b, int64_t* out) {
  if (a == b || b == 1) {
    *out = a;
  } else if (a == 1) {
    *out = b;
  } else if (a < 0 || b < 0) {
    *out = std::max(a, b);
  } else {
    return false;
  }
  return true;
}

}  // namespace

MatmulBatch::MatmulBatch(const Shape& x, const Shape& y) {
  const Shape xb(x.begin(), x.end() - 2);
  const Shape yb(y.begin(), y.end() - 2);
  const size_t rank = std::max(xb.size(), yb.size());
  out_dims_.resize(rank);
  bool known = true;
  for (size_t j = 0; j < rank; ++j) {
    const int64_t xd = AlignedDim(xb, rank, j);
    const int64_t yd = AlignedDim(yb, rank, j);
    RILL_CHECK(Broadcast(xd, yd, &out_dims_[j]), kInvalidArgument, "matmul: batch dims of X ",
               ShapeToString(x), " and Y ", ShapeToString(y), " do not broadcast (", xd, " vs ", yd,
               " at batch dim ", j, " from the left of Out's)");
    known = known && xd >= 0 && yd >= 0;
  }
  if (!known) return;
  // Strides in matrices, innermost dim first; a dim of 1 repeats (stride 0).
  int64_t x_step = 1;
  int64_t y_step = 1;
  std::vector<Dim> inner_first;
  for (size_t j = rank; j-- > 0;) {
    const int64_t xd = AlignedDim(xb, rank, j);
    const int64_t yd = AlignedDim(yb, rank, j);
    const int64_t size = out_dims_[j];
    count_ = CheckedMultiply(count_, size);
    const Dim dim{size, xd == 1 ? 0 : x_step, yd == 1 ? 0 : y_step};
    x_step = CheckedMultiply(x_step, xd);
    y_step = CheckedMultiply(y_step, yd);
    if (size == 1) continue;
    // Merge with the dim inside it when stepping this dim once is stepping
    // that one through its whole size, in X and in Y.
    if (!inner_first.empty()) {
      Dim& in = inner_first.back();
      if (dim.x_stride == in.x_stride * in.size && dim.y_stride == in.y_stride * in.size) {
        in.size *= size;
        continue;
      }
    }
    inner_first.push_back(dim);
  }
  x_count_ = x_step;
  y_count_ = y_step;
  dims_.assign(inner_first.rbegin(), inner_first.rend());
}

int64_t MatmulBatch::Decompose(int64_t i, bool of_x) const {
  int64_t at = 0;
  for (size_t j = dims_.size(); j-- > 0;) {
    const Dim& d = dims_[j];
    at += (i % d.size) * (of_x ? d.x_stride : d.y_stride);
    i /= d.size;
  }
  return at;
}

std::vector<MatmulRun> MatmulBatch::Runs() const {
  std::vector<MatmulRun> runs;
  if (count_ == 0) return runs;
  const Dim inner = dims_.empty() ? Dim{1, 0, 0} : dims_.back();
  for (int64_t first = 0; first < count_; first += inner.size) {
    runs.push_back(
        {first, inner.size, XMatrix(first), inner.x_stride, YMatrix(first), inner.y_stride});
  }
  return runs;
}

}  // namespace rill
