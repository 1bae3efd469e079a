// Winograd F(2x2, 3x3) convolution (see winograd3x3.h). With Lavin and Gray's
// matrices
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   (input tile d, 4x4)
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] (filter g, 3x3)
//   A^T = [1 1 1 0; 0 1 -1 -1]                       (output tile, 2x2)
// a tile's outputs are A^T [(G g G^T) .* (B^T d B)] A, summed over channels;
// the sum over channels of each of the 16 elementwise products is one GEMM.
#include "ops/nn/winograd3x3.h"

#include <algorithm>

#include "ops/math/blas.h"
#include "ops/nn/thread_scratch.h"
#include "ops/nn/winograd3x3_lanes.h"

namespace rill {
namespace {

// Images per chunk: as many as a vector of the transforms holds (8 floats
// of AVX2), while the chunk's transformed tiles and products (16 x (channels
// + out_channels) x tiles values an image) fit in about 2 MB. Measured on the
// ResNet's shapes (64 channels of 7x7, 32 of 14x14; batch 64, one thread):
// 4, 8, 12, 16 and 24 images took 2.5, 2.1, 2.2-2.5, 2.4 and 2.4 ms (7x7) and
// 2.0, 1.8-1.9, 1.9-2.4, 2.0 and 2.2 ms (14x14); im2col took 3.1 ms for each.
constexpr int64_t kMaxImagesPerChunk = 8;
constexpr int64_t kValuesPerChunk = int64_t{1} << 19;
// Below 4 images a chunk, the transforms' vectors would be mostly empty:
// larger images keep im2col, whose GEMMs are wide enough there.
constexpr int64_t kMinImagesPerChunk = 4;

// Tags of this file's ThreadScratch buffers.
struct ImagesTag;    // a chunk's input images, image-minor
struct TilesTag;     // their transformed tiles
struct ProductsTag;  // the GEMMs' products (or their gradients)
struct OutputsTag;   // a chunk's outputs (or their gradients), image-minor
struct FilterGradTag;

// Copies n images x [channels, height, width] (image after image) into xt
// [channels, rows, cols, n], image-minor, the image at (top, left) of each
// plane and the rest zero.
template <class T>
void GatherImageMinor(const T* x, int64_t channels, int64_t height, int64_t width, int64_t rows,
                      int64_t cols, int64_t top, int64_t left, int64_t n, T* xt) {
  const int64_t image = channels * height * width;
  std::fill(xt, xt + channels * rows * cols * n, T(0));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < height; ++y) {
      const T* in = x + (c * height + y) * width;
      T* out = xt + ((c * rows + y + top) * cols + left) * n;
      for (int64_t px = 0; px < width; ++px) {
        for (int64_t i = 0; i < n; ++i) out[px * n + i] = in[i * image + px];
      }
    }
  }
}

// The input images of a chunk, zero-padded, as the input transform reads them.
template <class T>
void GatherImages(const T* x, const Winograd3x3Shape& s, const WinogradTiles& l, T* xt) {
  GatherImageMinor(x, s.channels, s.height, s.width, l.padded_h, l.padded_w, s.pad_h, s.pad_w,
                   l.images, xt);
}

// Copies yt back into n images [out_channels, out_h, out_w]; the outputs of
// tiles past an odd edge are dropped.
template <class T>
void ScatterImages(const T* yt, const Winograd3x3Shape& s, const WinogradTiles& l, T* y) {
  const int64_t n = l.images, out_h = s.out_h(), out_w = s.out_w();
  const int64_t image = s.out_channels * out_h * out_w;
  const int64_t rows = 2 * s.tiles_h(), cols = 2 * s.tiles_w();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < s.out_channels; ++o) {
      for (int64_t oy = 0; oy < out_h; ++oy) {
        const T* in = yt + ((o * rows + oy) * cols) * n + i;
        T* out = y + i * image + (o * out_h + oy) * out_w;
        for (int64_t ox = 0; ox < out_w; ++ox) out[ox] = in[ox * n];
      }
    }
  }
}

// The widest build of the tile transforms this CPU runs.
template <class T>
const WinogradTransforms<T>& Transforms() {
  static const WinogradTransforms<T> chosen = [] {
#ifdef RILL_WINOGRAD_AVX2
    if (__builtin_cpu_supports("avx2")) return WinogradTransformsAvx2(T{});
#endif
    return WinogradTransforms16(T{});
  }();
  return chosen;
}

}  // namespace

int64_t Winograd3x3Shape::values_per_image() const {
  return 16 * (channels + out_channels) * tiles_h() * tiles_w();
}

int64_t Winograd3x3Shape::images_per_chunk() const {
  return std::clamp<int64_t>(kValuesPerChunk / values_per_image(), 1, kMaxImagesPerChunk);
}

bool Winograd3x3Applies(const ConvGeometry& g) {
  if (g.kernel_h != 3 || g.kernel_w != 3 || g.stride_h != 1 || g.stride_w != 1 ||
      g.dilation_h != 1 || g.dilation_w != 1 || g.groups != 1 || g.pad_h > 2 || g.pad_w > 2 ||
      g.channels < 8 || g.out_channels < 8 || g.out_h < 1 || g.out_w < 1) {
    return false;
  }
  const int64_t values = std::max(Winograd3x3Forward(g).values_per_image(),
                                  Winograd3x3InputGrad(g).values_per_image());
  return values * kMinImagesPerChunk <= kValuesPerChunk;
}

Winograd3x3Shape Winograd3x3Forward(const ConvGeometry& g) {
  return {g.channels, g.out_channels, g.height, g.width, g.pad_h, g.pad_w};
}

Winograd3x3Shape Winograd3x3InputGrad(const ConvGeometry& g) {
  return {g.out_channels, g.channels, g.out_h, g.out_w, 2 - g.pad_h, 2 - g.pad_w};
}

template <class T>
void Winograd3x3Filters(const T* w, const Winograd3x3Shape& s, bool turned, T* u) {
  const int64_t plane = s.out_channels * s.channels;
  const T half = T(0.5);
  for (int64_t o = 0; o < s.out_channels; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const T* f = turned ? w + (c * s.out_channels + o) * 9 : w + (o * s.channels + c) * 9;
      T k[3][3];
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) k[i][j] = turned ? f[(2 - i) * 3 + (2 - j)] : f[i * 3 + j];
      }
      T gk[4][3];  // G k
      for (int j = 0; j < 3; ++j) {
        gk[0][j] = k[0][j];
        gk[1][j] = (k[0][j] + k[1][j] + k[2][j]) * half;
        gk[2][j] = (k[0][j] - k[1][j] + k[2][j]) * half;
        gk[3][j] = k[2][j];
      }
      T* out = u + o * s.channels + c;
      for (int r = 0; r < 4; ++r) {  // (G k) G^T
        out[(4 * r) * plane] = gk[r][0];
        out[(4 * r + 1) * plane] = (gk[r][0] + gk[r][1] + gk[r][2]) * half;
        out[(4 * r + 2) * plane] = (gk[r][0] - gk[r][1] + gk[r][2]) * half;
        out[(4 * r + 3) * plane] = gk[r][2];
      }
    }
  }
}

template <class T>
void Winograd3x3Convolve(const T* x, const T* u, const Winograd3x3Shape& s, int64_t images, T* y) {
  const WinogradTransforms<T>& transforms = Transforms<T>();
  const int64_t chunk = s.images_per_chunk();
  const WinogradTiles full(s, chunk);
  T* xt = ThreadScratch<T, ImagesTag>(s.channels * full.padded_h * full.padded_w * chunk);
  T* v = ThreadScratch<T, TilesTag>(16 * s.channels * full.columns());
  T* m = ThreadScratch<T, ProductsTag>(16 * s.out_channels * full.columns());
  T* yt = ThreadScratch<T, OutputsTag>(s.out_channels * 4 * full.tiles * chunk);
  for (int64_t first = 0; first < images; first += chunk) {
    const WinogradTiles l(s, std::min(chunk, images - first));
    const int64_t cols = l.columns();
    GatherImages(x + first * s.channels * s.height * s.width, s, l, xt);
    transforms.input(xt, s, l, v, s.channels * cols);
    for (int64_t e = 0; e < 16; ++e) {
      Gemm(false, false, s.out_channels, cols, s.channels, T(1),
           u + e * s.out_channels * s.channels, v + e * s.channels * cols, T(0),
           m + e * s.out_channels * cols);
    }
    transforms.output(m, s.out_channels * cols, s, l, yt);
    ScatterImages(yt, s, l, y + first * s.out_channels * s.out_h() * s.out_w());
  }
}

// dW = G^T dU G for each (o, c): dU holds 16 planes of [out_channels x
// channels], dw is [out_channels, channels, 3, 3].
template <class T>
void FilterGradsFromTiles(const T* du, const Winograd3x3Shape& s, T* dw) {
  const int64_t plane = s.out_channels * s.channels;
  const T half = T(0.5);
  for (int64_t oc = 0; oc < plane; ++oc) {
    T x[4][4];
    for (int e = 0; e < 16; ++e) x[e / 4][e % 4] = du[e * plane + oc];
    T r[3][4];  // G^T x
    for (int q = 0; q < 4; ++q) {
      const T mid = (x[1][q] + x[2][q]) * half;
      r[0][q] = x[0][q] + mid;
      r[1][q] = (x[1][q] - x[2][q]) * half;
      r[2][q] = mid + x[3][q];
    }
    T* out = dw + oc * 9;
    for (int i = 0; i < 3; ++i) {  // (G^T x) G
      const T mid = (r[i][1] + r[i][2]) * half;
      out[i * 3] = r[i][0] + mid;
      out[i * 3 + 1] = (r[i][1] - r[i][2]) * half;
      out[i * 3 + 2] = mid + r[i][3];
    }
  }
}

template <class T>
void Winograd3x3FilterGrad(const T* x, const T* dy, const Winograd3x3Shape& s, int64_t images,
                           T* dw) {
  const WinogradTransforms<T>& transforms = Transforms<T>();
  const int64_t chunk = s.images_per_chunk();
  const WinogradTiles full(s, chunk);
  const int64_t plane = s.out_channels * s.channels;
  T* xt = ThreadScratch<T, ImagesTag>(s.channels * full.padded_h * full.padded_w * chunk);
  T* v = ThreadScratch<T, TilesTag>(16 * s.channels * full.columns());
  T* dm = ThreadScratch<T, ProductsTag>(16 * s.out_channels * full.columns());
  T* dyt = ThreadScratch<T, OutputsTag>(s.out_channels * 4 * full.tiles * chunk);
  T* du = ThreadScratch<T, FilterGradTag>(16 * plane);
  std::fill(du, du + 16 * plane, T(0));
  for (int64_t first = 0; first < images; first += chunk) {
    const WinogradTiles l(s, std::min(chunk, images - first));
    const int64_t cols = l.columns();
    GatherImages(x + first * s.channels * s.height * s.width, s, l, xt);
    transforms.input(xt, s, l, v, s.channels * cols);
    GatherImageMinor(dy + first * s.out_channels * s.out_h() * s.out_w(), s.out_channels, s.out_h(),
                     s.out_w(), 2 * s.tiles_h(), 2 * s.tiles_w(), 0, 0, l.images, dyt);
    transforms.output_grad(dyt, s, l, dm, s.out_channels * cols);
    for (int64_t e = 0; e < 16; ++e) {
      Gemm(false, true, s.out_channels, s.channels, cols, T(1), dm + e * s.out_channels * cols,
           v + e * s.channels * cols, T(1), du + e * plane);
    }
  }
  FilterGradsFromTiles(du, s, dw);
}

template void Winograd3x3Filters<float>(const float*, const Winograd3x3Shape&, bool, float*);
template void Winograd3x3Filters<double>(const double*, const Winograd3x3Shape&, bool, double*);
template void Winograd3x3Convolve<float>(const float*, const float*, const Winograd3x3Shape&,
                                         int64_t, float*);
template void Winograd3x3Convolve<double>(const double*, const double*, const Winograd3x3Shape&,
                                          int64_t, double*);
template void Winograd3x3FilterGrad<float>(const float*, const float*, const Winograd3x3Shape&,
                                           int64_t, float*);
template void Winograd3x3FilterGrad<double>(const double*, const double*, const Winograd3x3Shape&,
                                            int64_t, double*);

}  // namespace rill
