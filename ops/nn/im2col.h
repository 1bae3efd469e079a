// im2col and col2im for 2-D convolution of one NCHW image, plus the window
// helpers shared by conv2d and pool2d.
#pragma once

#include <cstdint>

#include "runtime/op_schema.h"

namespace rill {

// The geometry of one image's convolution. The column matrix is
// [channels * kernel_h * kernel_w, out_h * out_w], row-major; row
// (c * kernel_h + i) * kernel_w + j holds input channel c seen through kernel
// tap (i, j) at every output position.
struct Im2ColGeometry {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t pad_h = 0;
  int64_t pad_w = 0;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;
  int64_t out_h = 0;
  int64_t out_w = 0;

  int64_t col_rows() const { return channels * kernel_h * kernel_w; }
  int64_t col_cols() const { return out_h * out_w; }
};

// Output extent of a window of `kernel` taps spaced `dilation` apart sliding
// with `stride` over `in` elements padded by `pad` on both sides:
// (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1. Returns -1 when
// `in` is -1 (unknown). The caller checks that the window fits.
int64_t WindowOutputSize(int64_t in, int64_t kernel, int64_t pad, int64_t stride,
                         int64_t dilation = 1);

// Attribute check for (height, width) pairs such as strides: exactly two
// ints, each at least `min`.
AttrCheck PairAtLeast(int64_t min);

// Writes the column matrix of image `im` ([channels, height, width]) to `col`;
// taps that fall into the padding read as zero.
template <class T>
void Im2Col(const T* im, const Im2ColGeometry& g, T* col);

// The adjoint of Im2Col: adds each column entry into the image element it was
// read from (entries over the padding are dropped). `im` is not cleared first.
template <class T>
void Col2Im(const T* col, const Im2ColGeometry& g, T* im);

}  // namespace rill
