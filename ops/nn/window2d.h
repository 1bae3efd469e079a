// The geometry of a 2-D window sweeping NCHW images, as conv2d and pool2d
// resolve it from their attributes (conv_pool_geometry.h) and as both their
// CPU kernels and their CUDA launchers (conv_cuda.h, pool_cuda.h) read it.
// Plain structs, C++17 and no runtime headers: nvcc compiles the .cu files
// that include this. Device code reads the fields only.
#pragma once

#include <cstdint>

namespace rill {

// Output extent of a window of `kernel` taps spaced `dilation` apart sliding
// with `stride` over `in` elements padded by `pad` on both sides:
// (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1. Returns -1 when
// `in` is -1 (unknown). The caller checks that the window fits.
inline int64_t WindowOutputSize(int64_t in, int64_t kernel, int64_t pad, int64_t stride,
                                int64_t dilation = 1) {
  if (in < 0) return -1;
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// Images [batch, channels, height, width] swept by a kernel_h x kernel_w
// window (taps dilation apart, zero padding pad on each side) at out_h x
// out_w positions. At shape inference a size known only at run time is -1.
struct Window2d {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t out_h = 0;
  int64_t out_w = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t pad_h = 0;
  int64_t pad_w = 0;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;

  // Whether the dilated window fits the padded image on both axes (an
  // unknown size fits).
  bool Fits() const {
    return (height < 0 || height + 2 * pad_h >= dilation_h * (kernel_h - 1) + 1) &&
           (width < 0 || width + 2 * pad_w >= dilation_w * (kernel_w - 1) + 1);
  }
  // Sets out_h and out_w from the rest (WindowOutputSize).
  void SetOutputSize() {
    out_h = WindowOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
    out_w = WindowOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  }
};

// One conv2d run. Input is [batch, channels, height, width], Filter
// [out_channels, channels / groups, kernel_h, kernel_w], Output [batch,
// out_channels, out_h, out_w]. Group g of Output sees group g of Input only.
struct ConvGeometry : Window2d {
  int64_t out_channels = 0;
  int64_t groups = 1;

  // Rows of one group's column matrix (the GEMMs' inner size for Output).
  int64_t col_rows() const { return channels / groups * kernel_h * kernel_w; }
  // Columns: output positions per image.
  int64_t col_cols() const { return out_h * out_w; }
  // 1x1, stride 1, no padding: an image is its own column matrix (no im2col).
  bool direct() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 &&
           pad_w == 0;
  }
};

// One pool2d run over the batch * channels planes of X, global pooling
// resolved (the window is the plane, stride 1, no padding); dilation is 1.
struct PoolGeometry : Window2d {
  bool is_max = true;
  bool exclusive = true;  // avg: divide by the non-padding count
};

}  // namespace rill
