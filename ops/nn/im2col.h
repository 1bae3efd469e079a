// im2col and col2im for 2-D convolution of one NCHW image, plus the
// attribute check conv2d and pool2d share.
#pragma once

#include <cstdint>

#include "ops/nn/window2d.h"
#include "rill/op_schema.h"

namespace rill {

// Attribute check for (height, width) pairs such as strides: exactly two
// ints, each at least `min`.
AttrCheck PairAtLeast(int64_t min);

// Writes the column matrix of one channel group of one image (`im`:
// [channels / groups, height, width]) to `col`: [g.col_rows(), g.col_cols()],
// row-major; row (c * kernel_h + i) * kernel_w + j holds channel c seen
// through kernel tap (i, j) at every output position, and taps that fall into
// the padding read as zero.
template <class T>
void Im2Col(const T* im, const ConvGeometry& g, T* col);

// The adjoint of Im2Col: adds each column entry into the image element it was
// read from (entries over the padding are dropped). `im` is not cleared first
// and holds no -0 (an image that started at +0 and was only added to never
// does: with stride 1 and output rows as wide as the input's, the adds go by
// blocks that add +0 to cells a tap misses). `col` is scratch: its entries
// over the padding may be overwritten with zeros.
template <class T>
void Col2Im(T* col, const ConvGeometry& g, T* im);

}  // namespace rill
