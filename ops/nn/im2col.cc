// im2col and col2im for 2-D convolution of one NCHW image.
#include "ops/nn/im2col.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "rill/error.h"

namespace rill {
namespace {

// Output positions o in [0, out) whose input index o * stride + offset lies
// in [0, in), as [begin, end). Computed once per kernel tap so the inner
// loops need no bounds tests or divisions.
struct Range {
  int64_t begin;
  int64_t end;
};

Range ValidRange(int64_t offset, int64_t stride, int64_t in, int64_t out) {
  const int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t end = in - offset <= 0 ? 0 : (in - offset + stride - 1) / stride;
  Range r{std::min(begin, out), std::min(end, out)};
  r.end = std::max(r.end, r.begin);
  return r;
}

}  // namespace

AttrCheck PairAtLeast(int64_t min) {
  AttrCheck each = AtLeast(min);
  return [each](const proto::Attr& a) -> std::string {
    if (a.value_case() == proto::Attr::kInts && a.ints().values_size() != 2) {
      return StrCat("must hold 2 values (height, width), holds ", a.ints().values_size());
    }
    return each(a);
  };
}

namespace {

// Stride 1 with output rows as wide as the input's ("same" padding across,
// no dilation across): a tap's valid output rows read consecutive input rows,
// so Im2Col moves them with one copy and zeroes the few columns it carries in
// from neighbouring rows (they are the padding's), and Col2Im adds them back
// as one block. For the small images of the CNN and the ResNet (7x7 to 28x28)
// per-row loops cost more than the values they move: the CNN's 14x14, 32
// channel, 5x5 im2col took 38 us an image row by row and 17 us this way.
bool IsRowBlockGeometry(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.dilation_w == 1 && g.out_w == g.width;
}

// Zeroes the columns outside `xs` of rows `ys` of a tap's column row (w
// wide) column by column, as wide as the padding at most: strided stores,
// where a loop per row became two library calls per row.
template <class T>
void ZeroPaddingColumns(T* row, int64_t w, Range ys, Range xs) {
  auto zero_column = [&](int64_t ox) {
    for (int64_t oy = ys.begin; oy < ys.end; ++oy) row[oy * w + ox] = T(0);
  };
  for (int64_t ox = 0; ox < xs.begin; ++ox) zero_column(ox);
  for (int64_t ox = xs.end; ox < w; ++ox) zero_column(ox);
}

// Zeroes everything of a tap's column row (h rows of w) that reads the
// padding: the rows outside `ys` whole, and the columns outside `xs` of the
// rest. Im2Col writes the entries that read the image around it.
template <class T>
void ZeroTapPadding(T* row, int64_t w, int64_t h, Range ys, Range xs) {
  if (ys.begin > 0) std::fill(row, row + ys.begin * w, T(0));
  if (ys.end < h) std::fill(row + ys.end * w, row + h * w, T(0));
  ZeroPaddingColumns(row, w, ys, xs);
}

// to[k] += from[k]; the two never overlap (restrict: no overlap test per call).
template <class T>
void AddBlock(T* __restrict to, const T* __restrict from, int64_t n) {
  for (int64_t k = 0; k < n; ++k) to[k] += from[k];
}

// One tap (c, i, j) of a row-block geometry: its column row's index, the
// rows and columns of it that read the image, and the block of it that maps
// onto the channel's plane: element e at plane element e + shift, for e in
// [first, last) (empty when no row is valid).
struct RowBlockTap {
  int64_t channel;
  int64_t index;  // (c * kernel_h + i) * kernel_w + j
  Range ys, xs;
  int64_t shift, first, last;
};

template <class Fn>
void ForEachRowBlockTap(const ConvGeometry& g, Fn fn) {
  const int64_t w = g.width;
  const int64_t plane = g.height * w;
  const int64_t channels = g.channels / g.groups;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t y_off = i * g.dilation_h - g.pad_h;
      const Range ys = ValidRange(y_off, 1, g.height, g.out_h);
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t x_off = j - g.pad_w;
        const int64_t shift = y_off * w + x_off;
        // Clipped to the plane: what falls outside lies in the padding columns.
        const int64_t first = std::max(ys.begin * w, -shift);
        const int64_t last = std::max(first, std::min(ys.end * w, plane - shift));
        fn(RowBlockTap{c, (c * g.kernel_h + i) * g.kernel_w + j, ys,
                       ValidRange(x_off, 1, g.width, g.out_w), shift, first, last});
      }
    }
  }
}

// Im2Col for IsRowBlockGeometry; false (nothing written) for other geometries.
template <class T>
bool Im2ColRowBlocks(const T* im, const ConvGeometry& g, T* col) {
  if (!IsRowBlockGeometry(g)) return false;
  const int64_t w = g.width;
  const int64_t cols = g.col_cols();
  ForEachRowBlockTap(g, [&](const RowBlockTap& t) {
    T* row = col + t.index * cols;
    if (t.last > t.first) {
      const T* src = im + t.channel * g.height * w;
      std::memcpy(row + t.first, src + t.first + t.shift,
                  static_cast<size_t>(t.last - t.first) * sizeof(T));
    }
    ZeroTapPadding(row, w, g.out_h, t.ys, t.xs);
  });
  return true;
}

// Col2Im for the same geometries as Im2ColRowBlocks, by the same trick in
// reverse: a tap's entries over the padding are zeroed in `col` first, then
// the tap's valid rows are added to the image as one block. The zeros land on
// image cells the tap does not reach; x + 0 is x for every x but -0, and the
// image conv2d_grad adds into starts at +0, which sums never turn into -0, so
// the bits equal the row-by-row adds'. Per-row loops of 7 values cost more
// than their adds (the ResNet's 7x7 convolutions).
template <class T>
bool Col2ImRowBlocks(T* col, const ConvGeometry& g, T* im) {
  if (!IsRowBlockGeometry(g)) return false;
  const int64_t w = g.width;
  const int64_t cols = g.col_cols();
  ForEachRowBlockTap(g, [&](const RowBlockTap& t) {
    T* row = col + t.index * cols;
    ZeroPaddingColumns(row, w, t.ys, t.xs);
    T* dst = im + t.channel * g.height * w;
    AddBlock(dst + t.first + t.shift, row + t.first, t.last - t.first);
  });
  return true;
}

}  // namespace

template <class T>
void Im2Col(const T* im, const ConvGeometry& g, T* col) {
  if (Im2ColRowBlocks(im, g, col)) return;
  const int64_t plane = g.height * g.width;
  const int64_t cols = g.col_cols();
  const int64_t channels = g.channels / g.groups;
  for (int64_t c = 0; c < channels; ++c) {
    const T* src = im + c * plane;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t y_off = i * g.dilation_h - g.pad_h;
      const Range ys = ValidRange(y_off, g.stride_h, g.height, g.out_h);
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t x_off = j * g.dilation_w - g.pad_w;
        const Range xs = ValidRange(x_off, g.stride_w, g.width, g.out_w);
        T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * cols;
        for (int64_t oy = ys.begin; oy < ys.end; ++oy) {
          T* dst = row + oy * g.out_w;
          // Index of output column 0 in src; only ox in xs is dereferenced.
          const int64_t base = (oy * g.stride_h + y_off) * g.width + x_off;
          if (g.stride_w == 1) {
            if (xs.end > xs.begin) {
              std::memcpy(dst + xs.begin, src + base + xs.begin,
                          static_cast<size_t>(xs.end - xs.begin) * sizeof(T));
            }
          } else {
            for (int64_t ox = xs.begin; ox < xs.end; ++ox) dst[ox] = src[base + ox * g.stride_w];
          }
        }
        ZeroTapPadding(row, g.out_w, g.out_h, ys, xs);
      }
    }
  }
}

template <class T>
void Col2Im(T* col, const ConvGeometry& g, T* im) {
  if (Col2ImRowBlocks(col, g, im)) return;
  const int64_t plane = g.height * g.width;
  const int64_t cols = g.col_cols();
  const int64_t channels = g.channels / g.groups;
  for (int64_t c = 0; c < channels; ++c) {
    T* dst = im + c * plane;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t y_off = i * g.dilation_h - g.pad_h;
      const Range ys = ValidRange(y_off, g.stride_h, g.height, g.out_h);
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t x_off = j * g.dilation_w - g.pad_w;
        const Range xs = ValidRange(x_off, g.stride_w, g.width, g.out_w);
        const T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * cols;
        for (int64_t oy = ys.begin; oy < ys.end; ++oy) {
          const T* src = row + oy * g.out_w;
          const int64_t base = (oy * g.stride_h + y_off) * g.width + x_off;
          if (g.stride_w == 1) {
            for (int64_t ox = xs.begin; ox < xs.end; ++ox) dst[base + ox] += src[ox];
          } else {
            for (int64_t ox = xs.begin; ox < xs.end; ++ox) dst[base + ox * g.stride_w] += src[ox];
          }
        }
      }
    }
  }
}

template void Im2Col<float>(const float*, const ConvGeometry&, float*);
template void Im2Col<double>(const double*, const ConvGeometry&, double*);
template void Col2Im<float>(float*, const ConvGeometry&, float*);
template void Col2Im<double>(double*, const ConvGeometry&, double*);

}  // namespace rill
