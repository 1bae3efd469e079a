// Winograd F(2x2, 3x3) and F(2x2, 5x5) convolution (see winograd.h). A
// tile's outputs are A^T [(G g G^T) .* (B^T d B)] A summed over channels, and
// the sum over channels of each of the (r+1)^2 elementwise products is one
// GEMM. For 3x3, Lavin and Gray's matrices
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   (input tile d, 4x4)
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] (filter g, 3x3)
//   A^T = [1 1 1 0; 0 1 -1 -1]                       (output tile, 2x2)
// For 5x5, the Toom-Cook construction at the points 0, 1, -1, 2, -2 and
// infinity (A^T's columns are the points' powers, G's rows the Lagrange
// weights, B^T solves the identity; checked against direct sums in float64
// to 4e-14): B^T and A^T in winograd_lanes.inc, G below (kG5).
#include "ops/nn/winograd.h"

#include <algorithm>
#include <type_traits>

#ifdef RILL_WINOGRAD_AVX2
#include <immintrin.h>
#endif

#include "ops/math/blas.h"
#include "ops/nn/thread_scratch.h"
#include "ops/nn/winograd_lanes.h"
#include "rill/parallel_for.h"

namespace rill {
namespace {

// Images per chunk: as many as a vector of the transforms holds (8 floats
// of AVX2), else 4 (a chunk that is not whole vectors leaves images to the
// scalar tail), while the chunk's transformed tiles and products (planes x
// (channels + out_channels) x tiles values an image) fit in about 8 MB of
// floats. Measured at batch 64 on one thread: the ResNet's 3x3 shapes (64
// channels of 7x7, 32 of 14x14) took 2.5, 2.1, 2.2-2.5, 2.4 and 2.4 ms (7x7)
// and 2.0, 1.8-1.9, 1.9-2.4, 2.0 and 2.2 ms (14x14) with 4, 8, 12, 16 and 24
// images a chunk, im2col 3.1 ms for each; the CNN trained at 1200-1220
// samples/s with its 5x5 convolution (32 to 64 channels, 14x14) in chunks of
// 4 images and at 1220-1250 in chunks of 8 (im2col: 910-930).
constexpr int64_t kMaxImagesPerChunk = 8;
constexpr int64_t kValuesPerChunk = int64_t{1} << 21;
// Below 4 images a chunk, the transforms' vectors would be mostly empty:
// larger images keep im2col, whose GEMMs are wide enough there.
constexpr int64_t kMinImagesPerChunk = 4;

// Tags of this file's ThreadScratch buffers.
struct ImagesTag;    // a chunk's input images, image-minor
struct TilesTag;     // their transformed tiles
struct ProductsTag;  // the GEMMs' products (or their gradients)
struct OutputsTag;   // a chunk's outputs (or their gradients), image-minor

// Zeroes what GatherImageMinor does not copy into: the rows above and below
// each plane's image and the columns left and right of it.
template <class T>
void ZeroImageBorders(int64_t channels, int64_t height, int64_t width, int64_t rows, int64_t cols,
                      int64_t top, int64_t left, int64_t n, T* xt) {
  const int64_t row = cols * n;
  for (int64_t c = 0; c < channels; ++c) {
    T* plane = xt + c * rows * row;
    std::fill(plane, plane + top * row, T(0));
    std::fill(plane + (top + height) * row, plane + rows * row, T(0));
    for (int64_t y = top; y < top + height; ++y) {
      std::fill(plane + y * row, plane + y * row + left * n, T(0));
      std::fill(plane + y * row + (left + width) * n, plane + (y + 1) * row, T(0));
    }
  }
}

// out[px * n + i] = in[i * image + px]: one row of n images, image-minor.
template <class T>
void TransposeRow(const T* in, int64_t image, int64_t width, int64_t n, T* out) {
  for (int64_t px = 0; px < width; ++px) {
    for (int64_t i = 0; i < n; ++i) out[px * n + i] = in[i * image + px];
  }
}

// out[i * image + ox] = in[ox * n + i]: the same row back, image after image.
template <class T>
void UntransposeRow(const T* in, int64_t width, int64_t n, int64_t image, T* out) {
  for (int64_t ox = 0; ox < width; ++ox) {
    for (int64_t i = 0; i < n; ++i) out[i * image + ox] = in[ox * n + i];
  }
}

#ifdef RILL_WINOGRAD_AVX2
bool HasAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  return avx2;
}

// out[c * out_stride + r] = in[r * in_stride + c] for r, c < 8: an 8 x 8
// block of floats transposed in AVX registers (element by element, the
// gather took 5% of a CNN step). Only where HasAvx2.
__attribute__((target("avx2"))) inline void Transpose8x8(const float* in, int64_t in_stride,
                                                         float* out, int64_t out_stride) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * in_stride);
  // Pairs, then quadruples of rows interleaved; then the 128-bit halves.
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  _mm256_storeu_ps(out + 0 * out_stride, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(out + 1 * out_stride, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(out + 2 * out_stride, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(out + 3 * out_stride, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(out + 4 * out_stride, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(out + 5 * out_stride, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(out + 6 * out_stride, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(out + 7 * out_stride, _mm256_permute2f128_ps(u3, u7, 0x31));
}

// TransposeRow and UntransposeRow of 8 float images in 8 x 8 blocks, the
// rest element-wise.
__attribute__((target("avx2"))) void TransposeRowOf8(const float* in, int64_t image, int64_t width,
                                                     float* out) {
  int64_t px = 0;
  for (; px + 8 <= width; px += 8) Transpose8x8(in + px, image, out + px * 8, 8);
  TransposeRow(in + px, image, width - px, 8, out + px * 8);
}

__attribute__((target("avx2"))) void UntransposeRowOf8(const float* in, int64_t width,
                                                       int64_t image, float* out) {
  int64_t ox = 0;
  for (; ox + 8 <= width; ox += 8) Transpose8x8(in + ox * 8, 8, out + ox, image);
  UntransposeRow(in + ox * 8, width - ox, 8, image, out + ox);
}
#endif

// TransposeRow, in 8 x 8 blocks where they apply.
template <class T>
void GatherRow(const T* in, int64_t image, int64_t width, int64_t n, T* out) {
#ifdef RILL_WINOGRAD_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (n == 8 && HasAvx2()) return TransposeRowOf8(in, image, width, out);
  }
#endif
  TransposeRow(in, image, width, n, out);
}

// UntransposeRow, in 8 x 8 blocks where they apply.
template <class T>
void ScatterRow(const T* in, int64_t width, int64_t n, int64_t image, T* out) {
#ifdef RILL_WINOGRAD_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (n == 8 && HasAvx2()) return UntransposeRowOf8(in, width, image, out);
  }
#endif
  UntransposeRow(in, width, n, image, out);
}

// Copies n images x [channels, height, width] (image after image) into xt
// [channels, rows, cols, n], image-minor, the image at (top, left) of each
// plane and the rest zero.
template <class T>
void GatherImageMinor(const T* x, int64_t channels, int64_t height, int64_t width, int64_t rows,
                      int64_t cols, int64_t top, int64_t left, int64_t n, T* xt) {
  const int64_t image = channels * height * width;
  ZeroImageBorders(channels, height, width, rows, cols, top, left, n, xt);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < height; ++y) {
      GatherRow(x + (c * height + y) * width, image, width, n,
                xt + ((c * rows + y + top) * cols + left) * n);
    }
  }
}

// The input images of a chunk, zero-padded, as the input transform reads them.
template <class T>
void GatherImages(const T* x, const WinogradShape& s, const WinogradTiles& l, T* xt) {
  GatherImageMinor(x, s.channels, s.height, s.width, l.padded_h, l.padded_w, s.pad_h, s.pad_w,
                   l.images, xt);
}

// Copies yt back into n images [out_channels, out_h, out_w]; the outputs of
// tiles past an odd edge are dropped.
template <class T>
void ScatterImages(const T* yt, const WinogradShape& s, const WinogradTiles& l, T* y) {
  const int64_t n = l.images, out_h = s.out_h(), out_w = s.out_w();
  const int64_t image = s.out_channels * out_h * out_w;
  const int64_t rows = 2 * s.tiles_h(), cols = 2 * s.tiles_w();
  for (int64_t o = 0; o < s.out_channels; ++o) {
    for (int64_t oy = 0; oy < out_h; ++oy) {
      ScatterRow(yt + ((o * rows + oy) * cols) * n, out_w, n, image, y + (o * out_h + oy) * out_w);
    }
  }
}

// The widest build of the tile transforms this CPU runs, for the kernel size.
template <class T>
WinogradTransforms<T> Transforms(int64_t kernel) {
  const int k = static_cast<int>(kernel);
#ifdef RILL_WINOGRAD_AVX2
  if (HasAvx2()) return WinogradTransformsAvx2(T{}, k);
#endif
  return WinogradTransforms16(T{}, k);
}

// G of F(2x2, 5x5) as integer rows over a denominator each: G[j][k] =
// kG5[j][k] / kG5Over[j]. Its transpose, for Filter@GRAD, over 24.
constexpr int kG5[6][5] = {{1, 0, 0, 0, 0},  {-1, -1, -1, -1, -1}, {-1, 1, -1, 1, -1},
                           {1, 2, 4, 8, 16}, {1, -2, 4, -8, 16},   {0, 0, 0, 0, 1}};
constexpr int kG5Over[6] = {4, 6, 6, 24, 24, 1};
constexpr int kG5T24[5][6] = {{6, -4, -4, 1, 1, 0},
                              {0, -4, 4, 2, -2, 0},
                              {0, -4, -4, 4, 4, 0},
                              {0, -4, 4, 8, -8, 0},
                              {0, -4, -4, 16, 16, 24}};

// G k G^T of one 5x5 filter k into the 36 planes of u (stride `plane`).
template <class T>
void Filter5(const T k[5][5], T* u, int64_t plane) {
  T gk[6][5];  // G k
  for (int j = 0; j < 6; ++j) {
    for (int q = 0; q < 5; ++q) {
      T sum = T(0);
      for (int i = 0; i < 5; ++i) sum += T(kG5[j][i]) * k[i][q];
      gk[j][q] = sum / T(kG5Over[j]);
    }
  }
  for (int j = 0; j < 6; ++j) {  // (G k) G^T
    for (int q = 0; q < 6; ++q) {
      T sum = T(0);
      for (int i = 0; i < 5; ++i) sum += gk[j][i] * T(kG5[q][i]);
      u[(6 * j + q) * plane] = sum / T(kG5Over[q]);
    }
  }
}

// G^T x G of one 6x6 tile gradient x into a 5x5 filter gradient.
template <class T>
void FilterGrad5(const T x[6][6], T* out) {
  T r[5][6];  // G^T x
  for (int k = 0; k < 5; ++k) {
    for (int q = 0; q < 6; ++q) {
      T sum = T(0);
      for (int j = 0; j < 6; ++j) sum += T(kG5T24[k][j]) * x[j][q];
      r[k][q] = sum / T(24);
    }
  }
  for (int k = 0; k < 5; ++k) {  // (G^T x) G
    for (int q = 0; q < 5; ++q) {
      T sum = T(0);
      for (int j = 0; j < 6; ++j) sum += r[k][j] * T(kG5T24[q][j]);
      out[k * 5 + q] = sum / T(24);
    }
  }
}

}  // namespace

int64_t WinogradShape::values_per_image() const {
  return planes() * (channels + out_channels) * tiles_h() * tiles_w();
}

int64_t WinogradShape::images_per_chunk() const {
  // Whole vectors of images: 8, else 4 (a 16-byte vector), else what fits.
  const int64_t fit = kValuesPerChunk / values_per_image();
  return fit >= kMaxImagesPerChunk ? kMaxImagesPerChunk : fit >= 4 ? 4 : std::max<int64_t>(1, fit);
}

bool WinogradApplies(const ConvGeometry& g) {
  if ((g.kernel_h != 3 && g.kernel_h != 5) || g.kernel_w != g.kernel_h || g.stride_h != 1 ||
      g.stride_w != 1 || g.dilation_h != 1 || g.dilation_w != 1 || g.groups != 1 ||
      g.pad_h >= g.kernel_h || g.pad_w >= g.kernel_w || g.channels < 8 || g.out_channels < 8 ||
      g.out_h < 1 || g.out_w < 1) {
    return false;
  }
  const int64_t values =
      std::max(WinogradForward(g).values_per_image(), WinogradInputGrad(g).values_per_image());
  return values * kMinImagesPerChunk <= kValuesPerChunk;
}

WinogradShape WinogradForward(const ConvGeometry& g) {
  return {g.channels, g.out_channels, g.height, g.width, g.pad_h, g.pad_w, g.kernel_h};
}

WinogradShape WinogradInputGrad(const ConvGeometry& g) {
  const int64_t k = g.kernel_h;
  return {g.out_channels, g.channels, g.out_h, g.out_w, k - 1 - g.pad_h, k - 1 - g.pad_w, k};
}

// Filter (o, c) of the forward filters w as the convolution s reads it, or,
// `turned`, w[c][o] turned 180 degrees (Input@GRAD's; see WinogradFilters).
template <int K, class T>
void ReadFilter(const T* w, const WinogradShape& s, int64_t o, int64_t c, bool turned, T k[K][K]) {
  const T* f = turned ? w + (c * s.out_channels + o) * K * K : w + (o * s.channels + c) * K * K;
  for (int i = 0; i < K; ++i) {
    for (int j = 0; j < K; ++j) k[i][j] = turned ? f[(K - 1 - i) * K + (K - 1 - j)] : f[i * K + j];
  }
}

// G k G^T of one 3x3 filter k into the 16 planes of u (stride `plane`).
template <class T>
void Filter3(const T k[3][3], T* u, int64_t plane) {
  const T half = T(0.5);
  T gk[4][3];  // G k
  for (int j = 0; j < 3; ++j) {
    gk[0][j] = k[0][j];
    gk[1][j] = (k[0][j] + k[1][j] + k[2][j]) * half;
    gk[2][j] = (k[0][j] - k[1][j] + k[2][j]) * half;
    gk[3][j] = k[2][j];
  }
  for (int r = 0; r < 4; ++r) {  // (G k) G^T
    u[(4 * r) * plane] = gk[r][0];
    u[(4 * r + 1) * plane] = (gk[r][0] + gk[r][1] + gk[r][2]) * half;
    u[(4 * r + 2) * plane] = (gk[r][0] - gk[r][1] + gk[r][2]) * half;
    u[(4 * r + 3) * plane] = gk[r][2];
  }
}

template <class T>
void WinogradFilters(const T* w, const WinogradShape& s, bool turned, T* u) {
  const int64_t plane = s.out_channels * s.channels;
  for (int64_t o = 0; o < s.out_channels; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      T* out = u + o * s.channels + c;
      if (s.kernel == 5) {
        T k[5][5];
        ReadFilter<5>(w, s, o, c, turned, k);
        Filter5(k, out, plane);
      } else {
        T k[3][3];
        ReadFilter<3>(w, s, o, c, turned, k);
        Filter3(k, out, plane);
      }
    }
  }
}

// Values from one transformed plane to the next in the scratch: `values`
// (a plane's), padded so that the planes of a chunk start 320 bytes apart
// modulo 4 KB. A transform writes one value into each of its 16 or 36 planes
// per tile; planes a multiple of 2 KB apart (64 channels of 49 tiles of 8
// images are 100352 bytes) put those stores in two cache sets. Alternated
// with unpadded planes, one thread at batch 256: the CNN 1396-1445 against
// 1122-1353 samples/s, the ResNet 997-1224 against 885-1192.
constexpr int64_t kPitchSlack = 1024;  // the most PlanePitch adds, in values

template <class T>
int64_t PlanePitch(int64_t values) {
  constexpr int64_t kPage = 4096, kApart = 320;
  const int64_t bytes = values * static_cast<int64_t>(sizeof(T));
  const int64_t pad = ((kApart - bytes % kPage) % kPage + kPage) % kPage;
  return values + (pad + static_cast<int64_t>(sizeof(T)) - 1) / static_cast<int64_t>(sizeof(T));
}

// What the convolution and its filter gradient share: a thread's scratch for
// a chunk of images, the products' and outputs' too, and the step that
// gathers a chunk's images and transforms them into tiles.
template <class T>
struct ChunkScratch {
  WinogradTransforms<T> transforms;
  int64_t chunk;
  T* xt;  // the chunk's images, image-minor
  T* v;   // their tiles, transformed
  T* m;   // the GEMMs' products, or their gradients
  T* yt;  // the chunk's outputs, or their gradients, image-minor
  explicit ChunkScratch(const WinogradShape& s)
      : transforms(Transforms<T>(s.kernel)), chunk(s.images_per_chunk()) {
    const WinogradTiles full(s, chunk);
    xt = ThreadScratch<T, ImagesTag>(s.channels * full.padded_h * full.padded_w * chunk);
    v = ThreadScratch<T, TilesTag>(s.planes() * (s.channels * full.columns() + kPitchSlack));
    m = ThreadScratch<T, ProductsTag>(s.planes() * (s.out_channels * full.columns() + kPitchSlack));
    yt = ThreadScratch<T, OutputsTag>(s.out_channels * 4 * full.tiles * chunk);
  }
  // Plane pitches of v and m for a chunk of l.images.
  static int64_t VPitch(const WinogradShape& s, const WinogradTiles& l) {
    return PlanePitch<T>(s.channels * l.columns());
  }
  static int64_t MPitch(const WinogradShape& s, const WinogradTiles& l) {
    return PlanePitch<T>(s.out_channels * l.columns());
  }
  // Transforms images [first, first + l.images) of x into v.
  void TileImages(const T* x, const WinogradShape& s, int64_t first, const WinogradTiles& l) {
    GatherImages(x + first * s.channels * s.height * s.width, s, l, xt);
    transforms.input(xt, s, l, v, VPitch(s, l));
  }
};

template <class T>
void WinogradConvolve(const T* x, const T* u, const WinogradShape& s, int64_t images, T* y) {
  ChunkScratch<T> c(s);
  for (int64_t first = 0; first < images; first += c.chunk) {
    const WinogradTiles l(s, std::min(c.chunk, images - first));
    const int64_t cols = l.columns();
    const int64_t v_pitch = c.VPitch(s, l), m_pitch = c.MPitch(s, l);
    c.TileImages(x, s, first, l);
    for (int64_t e = 0; e < s.planes(); ++e) {
      Gemm(false, false, s.out_channels, cols, s.channels, T(1),
           u + e * s.out_channels * s.channels, c.v + e * v_pitch, T(0), c.m + e * m_pitch);
    }
    c.transforms.output(c.m, m_pitch, s, l, c.yt);
    ScatterImages(c.yt, s, l, y + first * s.out_channels * s.out_h() * s.out_w());
  }
}

// G^T x G of one 4x4 tile gradient x into a 3x3 filter gradient.
template <class T>
void FilterGrad3(const T x[4][4], T* out) {
  const T half = T(0.5);
  T r[3][4];  // G^T x
  for (int q = 0; q < 4; ++q) {
    const T mid = (x[1][q] + x[2][q]) * half;
    r[0][q] = x[0][q] + mid;
    r[1][q] = (x[1][q] - x[2][q]) * half;
    r[2][q] = mid + x[3][q];
  }
  for (int i = 0; i < 3; ++i) {  // (G^T x) G
    const T mid = (r[i][1] + r[i][2]) * half;
    out[i * 3] = r[i][0] + mid;
    out[i * 3 + 1] = (r[i][1] - r[i][2]) * half;
    out[i * 3 + 2] = mid + r[i][3];
  }
}

// dW = G^T dU G for each (o, c): dU holds s.planes() planes of
// [out_channels x channels], dw is [out_channels, channels, k, k].
template <int N, class T>
void FilterGradsFromTiles(const T* du, int64_t plane, T* dw) {
  for (int64_t oc = 0; oc < plane; ++oc) {
    T x[N][N];
    for (int e = 0; e < N * N; ++e) x[e / N][e % N] = du[e * plane + oc];
    if constexpr (N == 6) {
      FilterGrad5(x, dw + oc * 25);
    } else {
      FilterGrad3(x, dw + oc * 9);
    }
  }
}

int64_t WinogradFilterGradParts(const WinogradShape& s, int64_t images) {
  const int64_t chunk = s.images_per_chunk();
  return std::clamp<int64_t>((images + chunk - 1) / chunk, 1, kMaxFilterGradParts);
}

int64_t WinogradFilterGradPartValues(const WinogradShape& s) {
  return s.planes() * s.out_channels * s.channels;
}

template <class T>
void WinogradFilterGradPart(const T* x, const T* dy, const WinogradShape& s, int64_t images,
                            int64_t part, T* du) {
  ChunkScratch<T> c(s);
  const int64_t plane = s.out_channels * s.channels;
  std::fill(du, du + s.planes() * plane, T(0));
  const int64_t chunks = (images + c.chunk - 1) / c.chunk;
  const int64_t parts = WinogradFilterGradParts(s, images);
  const int64_t end = std::min(images, PartBegin(chunks, parts, part + 1) * c.chunk);
  for (int64_t first = PartBegin(chunks, parts, part) * c.chunk; first < end; first += c.chunk) {
    const WinogradTiles l(s, std::min(c.chunk, images - first));
    const int64_t cols = l.columns();
    const int64_t v_pitch = c.VPitch(s, l), m_pitch = c.MPitch(s, l);
    c.TileImages(x, s, first, l);
    GatherImageMinor(dy + first * s.out_channels * s.out_h() * s.out_w(), s.out_channels, s.out_h(),
                     s.out_w(), 2 * s.tiles_h(), 2 * s.tiles_w(), 0, 0, l.images, c.yt);
    c.transforms.output_grad(c.yt, s, l, c.m, m_pitch);
    for (int64_t e = 0; e < s.planes(); ++e) {
      Gemm(false, true, s.out_channels, s.channels, cols, T(1), c.m + e * m_pitch,
           c.v + e * v_pitch, T(1), du + e * plane);
    }
  }
}

template <class T>
void WinogradFilterGradFromSum(const T* du, const WinogradShape& s, T* dw) {
  const int64_t plane = s.out_channels * s.channels;
  if (s.kernel == 5) {
    FilterGradsFromTiles<6>(du, plane, dw);
  } else {
    FilterGradsFromTiles<4>(du, plane, dw);
  }
}

template void WinogradFilters<float>(const float*, const WinogradShape&, bool, float*);
template void WinogradFilters<double>(const double*, const WinogradShape&, bool, double*);
template void WinogradConvolve<float>(const float*, const float*, const WinogradShape&, int64_t,
                                      float*);
template void WinogradConvolve<double>(const double*, const double*, const WinogradShape&, int64_t,
                                       double*);
template void WinogradFilterGradPart<float>(const float*, const float*, const WinogradShape&,
                                            int64_t, int64_t, float*);
template void WinogradFilterGradPart<double>(const double*, const double*, const WinogradShape&,
                                             int64_t, int64_t, double*);
template void WinogradFilterGradFromSum<float>(const float*, const WinogradShape&, float*);
template void WinogradFilterGradFromSum<double>(const double*, const WinogradShape&, double*);

}  // namespace rill
