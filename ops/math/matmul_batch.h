// How matmul's batch dims broadcast (numpy's matmul rule): X [..xb, ., .] and
// Y [..yb, ., .] are batches of matrices whose leading dims xb and yb are
// aligned from the right, a missing dim counting as 1; each pair of dims is
// equal or one of them is 1, which is repeated. Out's batch dims are the
// larger of each pair. MatmulBatch maps each product of Out (row-major over its
// batch dims) to the X and Y matrices it reads, and groups the products into
// runs that one strided-batched GEMM can do. Host code only; a plain value.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/shape.h"

namespace rill {

// Products out_first .. out_first + count - 1 read X matrices x_first,
// x_first + x_stride, ... and Y matrices y_first, y_first + y_stride, ...
// (strides in matrices; 0 repeats one matrix).
struct MatmulRun {
  int64_t out_first = 0;
  int64_t count = 0;
  int64_t x_first = 0;
  int64_t x_stride = 0;
  int64_t y_first = 0;
  int64_t y_stride = 0;
};

class MatmulBatch {
 public:
  MatmulBatch() = default;
  // From X's and Y's shapes (rank >= 2 each, checked by the caller): their
  // batch dims are all but the last two. Throws kInvalidArgument, naming both
  // shapes, unless the batch dims broadcast. Declared
  // shapes may hold -1 (unknown): -1 against 1 or -1 gives -1, against d > 1
  // gives d; the products' mapping is then meaningless (shape inference reads
  // only out_dims()).
  MatmulBatch(const Shape& x, const Shape& y);

  // Out's batch dims.
  const Shape& out_dims() const { return out_dims_; }
  // The number of products (of Out's matrices) and of X's and Y's matrices.
  int64_t count() const { return count_; }
  int64_t x_count() const { return x_count_; }
  int64_t y_count() const { return y_count_; }
  // Whether some X (Y) matrix is read by other than exactly one product: its
  // gradient is then a sum (or zeros, in an empty batch).
  bool x_reused() const { return x_count_ != count_; }
  bool y_reused() const { return y_count_ != count_; }

  // The X and Y matrices product i reads.
  int64_t XMatrix(int64_t i) const { return Decompose(i, /*of_x=*/true); }
  int64_t YMatrix(int64_t i) const { return Decompose(i, /*of_x=*/false); }

  // The products as runs of constant strides, in product order (none for an
  // empty batch).
  std::vector<MatmulRun> Runs() const;

 private:
  // One batch dim of Out with the strides (in matrices) X and Y take along it;
  // size-1 dims are dropped and adjacent dims merged where the strides allow.
  struct Dim {
    int64_t size;
    int64_t x_stride;
    int64_t y_stride;
  };

  int64_t Decompose(int64_t i, bool of_x) const;

  Shape out_dims_;
  std::vector<Dim> dims_;  // outermost first
  int64_t count_ = 1;
  int64_t x_count_ = 1;
  int64_t y_count_ = 1;
};

}  // namespace rill
