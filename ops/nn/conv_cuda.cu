// Device code of conv2d and conv2d_grad (conv_cuda.h): im2col and col2im
// kernels (grid-stride, one thread per element), cuBLAS strided-batched
// GEMMs over a chunk's images and channel groups, and the ordered sum of the
// per-image Filter@GRAD terms.
#include <cublas_v2.h>

#include <algorithm>

#include "ops/cuda_device_math.cuh"
#include "ops/nn/conv_cuda.h"
#include "runtime/device/cublas_handle.h"
#include "runtime/device/cuda_stream.h"

namespace rill::cuda {
namespace {

// Scratch per chunk: enough columns for a few images of a large layer
// (a 64-channel 3x3 layer at 56x56 takes 7 MiB an image in float32).
constexpr int64_t kScratchBudgetBytes = int64_t{64} << 20;

// Writes the column matrices of `images` images (x: [images, C, H, W]) to col:
// [images, C * kh * kw, oh * ow], entry ((c * kh + i) * kw + j, oy * ow + ox)
// of an image being x[c, oy * sh + i * dh - ph, ox * sw + j * dw - pw], or 0
// in the padding (im2col.cc's Im2Col, image by image).
template <class T, class I>
__global__ void Im2ColKernel(const T* x, T* col, ConvGeometry g, I n) {
  const I out_w = static_cast<I>(g.out_w), out_h = static_cast<I>(g.out_h);
  const I kernel_w = static_cast<I>(g.kernel_w), kernel_h = static_cast<I>(g.kernel_h);
  const I height = static_cast<I>(g.height), width = static_cast<I>(g.width);
  for (I e = blockIdx.x * I(blockDim.x) + threadIdx.x; e < n; e += I(blockDim.x) * gridDim.x) {
    I t = e;
    const I ox = t % out_w;
    t /= out_w;
    const I oy = t % out_h;
    t /= out_h;
    const I j = t % kernel_w;
    t /= kernel_w;
    const I i = t % kernel_h;
    t /= kernel_h;  // image * C + channel
    const I iy = oy * static_cast<I>(g.stride_h) + i * static_cast<I>(g.dilation_h) -
                 static_cast<I>(g.pad_h);
    const I ix = ox * static_cast<I>(g.stride_w) + j * static_cast<I>(g.dilation_w) -
                 static_cast<I>(g.pad_w);
    const bool inside = iy >= 0 && iy < height && ix >= 0 && ix < width;
    col[e] = inside ? x[(t * height + iy) * width + ix] : T(0);
  }
}

// The adjoint, gathered: each input pixel of the `images` images (dx:
// [images, C, H, W]) is the sum, from 0, of the column entries read from it,
// taps (i, j) in the CPU's order (Col2Im adds row by row, i then j, into a
// cleared image), so the sums round as the CPU's do.
template <class T, class I>
__global__ void Col2ImKernel(const T* col, T* dx, ConvGeometry g, I n) {
  const I out_w = static_cast<I>(g.out_w), out_h = static_cast<I>(g.out_h);
  const I kernel_w = static_cast<I>(g.kernel_w), kernel_h = static_cast<I>(g.kernel_h);
  const I stride_h = static_cast<I>(g.stride_h), stride_w = static_cast<I>(g.stride_w);
  const I height = static_cast<I>(g.height), width = static_cast<I>(g.width);
  const I cols = out_h * out_w;
  for (I e = blockIdx.x * I(blockDim.x) + threadIdx.x; e < n; e += I(blockDim.x) * gridDim.x) {
    I t = e;
    const I ix = t % width;
    t /= width;
    const I iy = t % height;
    t /= height;  // image * C + channel
    T sum = T(0);
    for (I i = 0; i < kernel_h; ++i) {
      const I ny = iy + static_cast<I>(g.pad_h) - i * static_cast<I>(g.dilation_h);  // oy * sh
      if (ny < 0 || (stride_h != 1 && ny % stride_h != 0)) continue;
      const I oy = stride_h == 1 ? ny : ny / stride_h;
      if (oy >= out_h) continue;
      const T* row = col + (t * kernel_h + i) * kernel_w * cols + oy * out_w;
      for (I j = 0; j < kernel_w; ++j) {
        const I nx = ix + static_cast<I>(g.pad_w) - j * static_cast<I>(g.dilation_w);
        if (nx < 0 || (stride_w != 1 && nx % stride_w != 0)) continue;
        const I ox = stride_w == 1 ? nx : nx / stride_w;
        if (ox >= out_w) continue;
        sum = Add(sum, row[j * cols + ox]);
      }
    }
    dx[e] = sum;
  }
}

// dw[e] += terms[0][e] + terms[1][e] + ... (`images` terms of n elements),
// image by image as the CPU's per-image GEMMs with beta = 1 add them.
template <class T>
__global__ void AddImageTermsKernel(const T* terms, T* dw, int64_t n, int64_t images) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{blockDim.x} * gridDim.x) {
    T acc = dw[e];
    for (int64_t b = 0; b < images; ++b) acc = Add(acc, terms[b * n + e]);
    dw[e] = acc;
  }
}

cublasStatus_t GemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const float* alpha, const float* a, int lda,
                                  long long sa, const float* b, int ldb, long long sb,
                                  const float* beta, float* c, int ldc, long long sc, int count) {
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc,
                                   sc, count);
}
cublasStatus_t GemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const double* alpha, const double* a,
                                  int lda, long long sa, const double* b, int ldb, long long sb,
                                  const double* beta, double* c, int ldc, long long sc, int count) {
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc,
                                   sc, count);
}

// A GEMM operand over a chunk: matrix (image, group) starts at
// p + image * image_stride + group * group_stride.
template <class P>
struct Operand {
  P* p;
  int64_t image_stride;
  int64_t group_stride;
};

// Row-major, as blas.h's Gemm, for every (image, group):
//   C = op(A) * op(B) + beta * C,  op(A) [m, k], op(B) [k, n], C [m, n].
// cuBLAS is column-major: a row-major [r, c] matrix is its column-major
// transpose, so C^T = op(B)^T * op(A)^T is computed with B first. One
// strided-batched call per image over the groups, or per group over the
// images, whichever makes fewer calls. The glue checked that m, n, k and
// the batch counts fit an int.
template <class T>
void GemmImagesGroups(cublasHandle_t h, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                      Operand<const T> a, Operand<const T> b, T beta, Operand<T> c, int64_t images,
                      int64_t groups) {
  const T alpha = T(1);
  const int lda = static_cast<int>(trans_a ? m : k);
  const int ldb = static_cast<int>(trans_b ? k : n);
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  auto call = [&](int64_t a_off, int64_t sa, int64_t b_off, int64_t sb, int64_t c_off, int64_t sc,
                  int64_t count) {
    CheckCublas(
        GemmStridedBatched(h, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                           static_cast<int>(k), &alpha, b.p + b_off, ldb, sb, a.p + a_off, lda, sa,
                           &beta, c.p + c_off, static_cast<int>(n), sc, static_cast<int>(count)),
        "conv2d: cublas<t>gemmStridedBatched");
  };
  if (groups >= images) {
    for (int64_t img = 0; img < images; ++img) {
      call(img * a.image_stride, a.group_stride, img * b.image_stride, b.group_stride,
           img * c.image_stride, c.group_stride, groups);
    }
  } else {
    for (int64_t g = 0; g < groups; ++g) {
      call(g * a.group_stride, a.image_stride, g * b.group_stride, b.image_stride,
           g * c.group_stride, c.image_stride, images);
    }
  }
}

template <class T>
void Im2Col(const T* x, T* col, const ConvGeometry& s, int64_t images, cudaStream_t stream) {
  const int64_t n = images * s.channels * s.kernel_h * s.kernel_w * s.col_cols();
  if (n <= 0) return;
  // Index math in 32 bits where every index fits (n bounds both buffers'):
  // 64-bit division is emulated on the GPU and made this kernel 6x slower
  // than its memory traffic.
  if (FitsInt32(n) && FitsInt32(images * s.channels * s.height * s.width)) {
    Im2ColKernel<T, int32_t>
        <<<Blocks(n), kThreads, 0, stream>>>(x, col, s, static_cast<int32_t>(n));
  } else {
    Im2ColKernel<T, int64_t><<<Blocks(n), kThreads, 0, stream>>>(x, col, s, n);
  }
}

template <class T>
void Zero(T* p, int64_t n, cudaStream_t stream) {
  if (p != nullptr && n > 0) {
    CheckCuda(cudaMemsetAsync(p, 0, static_cast<size_t>(n) * sizeof(T), stream),
              "conv2d: cudaMemsetAsync");  // +0.0
  }
}

}  // namespace

int64_t ConvChunkImages(const ConvGeometry& s, int64_t element_bytes, bool filter_grad) {
  const int64_t per_image = ConvScratchElements(s, 1, filter_grad) * element_bytes;
  const int64_t batch = std::max<int64_t>(s.batch, 1);
  if (per_image == 0) return batch;
  return std::clamp<int64_t>(kScratchBudgetBytes / per_image, 1, batch);
}

int64_t ConvScratchElements(const ConvGeometry& s, int64_t images, bool filter_grad) {
  const int64_t columns = s.direct() ? 0 : s.groups * s.col_rows() * s.col_cols();
  const int64_t terms = filter_grad ? s.out_channels * s.col_rows() : 0;
  return images * (columns + terms);
}

template <class T>
void Conv2d(const T* x, const T* w, T* y, const ConvGeometry& s, T* scratch, int64_t chunk,
            cudaStream_t stream) {
  if (s.batch == 0) return;
  cublasHandle_t h = CublasHandle(stream);
  const int64_t cols = s.col_cols();
  const int64_t k = s.col_rows();
  const int64_t mg = s.out_channels / s.groups;
  const int64_t in_image = s.channels * s.height * s.width;
  const int64_t in_group = in_image / s.groups;
  for (int64_t n0 = 0; n0 < s.batch; n0 += chunk) {
    const int64_t images = std::min(chunk, s.batch - n0);
    const T* xc = x + n0 * in_image;
    Operand<const T> columns{xc, in_image, in_group};  // direct: the image itself
    if (!s.direct()) {
      Im2Col(xc, scratch, s, images, stream);
      columns = {scratch, s.groups * k * cols, k * cols};
    }
    GemmImagesGroups<T>(h, false, false, mg, cols, k, {w, 0, mg * k}, columns, T(0),
                        {y + n0 * s.out_channels * cols, s.out_channels * cols, mg * cols}, images,
                        s.groups);
  }
}

template <class T>
void Conv2dGrad(const T* x, const T* w, const T* dy, T* dx, T* dw, const ConvGeometry& s,
                T* scratch, int64_t chunk, cudaStream_t stream) {
  const int64_t in_image = s.channels * s.height * s.width;
  const int64_t filter_numel = s.out_channels * s.col_rows();
  Zero(dw, filter_numel, stream);
  if (dy == nullptr || s.batch == 0) {
    Zero(dx, s.batch * in_image, stream);
    return;
  }
  if (dx == nullptr && dw == nullptr) return;
  cublasHandle_t h = CublasHandle(stream);
  const int64_t cols = s.col_cols();
  const int64_t k = s.col_rows();
  const int64_t mg = s.out_channels / s.groups;
  const int64_t in_group = in_image / s.groups;
  const int64_t out_image = s.out_channels * cols;
  // Columns first, then each image's Filter@GRAD term.
  T* col = scratch;
  T* terms = scratch + (s.direct() ? 0 : chunk * s.groups * k * cols);
  for (int64_t n0 = 0; n0 < s.batch; n0 += chunk) {
    const int64_t images = std::min(chunk, s.batch - n0);
    const T* xc = x + n0 * in_image;
    const Operand<const T> dyc{dy + n0 * out_image, out_image, mg * cols};
    const Operand<const T> filter{w, 0, mg * k};
    if (dw != nullptr) {
      Operand<const T> columns{xc, in_image, in_group};
      if (!s.direct()) {
        Im2Col(xc, col, s, images, stream);
        columns = {col, s.groups * k * cols, k * cols};
      }
      // term[image][group] = dOut[image][group] * columns[image][group]^T
      GemmImagesGroups<T>(h, false, true, mg, k, cols, dyc, columns, T(0),
                          {terms, filter_numel, mg * k}, images, s.groups);
      AddImageTermsKernel<T>
          <<<Blocks(filter_numel), kThreads, 0, stream>>>(terms, dw, filter_numel, images);
    }
    if (dx != nullptr) {
      T* dxc = dx + n0 * in_image;
      if (s.direct()) {
        GemmImagesGroups<T>(h, true, false, k, cols, mg, filter, dyc, T(0),
                            {dxc, in_image, in_group}, images, s.groups);
      } else {
        // columns[image][group] = Filter[group]^T * dOut[image][group], then col2im.
        GemmImagesGroups<T>(h, true, false, k, cols, mg, filter, dyc, T(0),
                            {col, s.groups * k * cols, k * cols}, images, s.groups);
        const int64_t n = images * in_image;
        if (n > 0 && FitsInt32(n) && FitsInt32(images * s.groups * k * cols)) {
          Col2ImKernel<T, int32_t>
              <<<Blocks(n), kThreads, 0, stream>>>(col, dxc, s, static_cast<int32_t>(n));
        } else if (n > 0) {
          Col2ImKernel<T, int64_t><<<Blocks(n), kThreads, 0, stream>>>(col, dxc, s, n);
        }
      }
    }
  }
}

template void Conv2d<float>(const float*, const float*, float*, const ConvGeometry&, float*,
                            int64_t, cudaStream_t);
template void Conv2d<double>(const double*, const double*, double*, const ConvGeometry&, double*,
                             int64_t, cudaStream_t);
template void Conv2dGrad<float>(const float*, const float*, const float*, float*, float*,
                                const ConvGeometry&, float*, int64_t, cudaStream_t);
template void Conv2dGrad<double>(const double*, const double*, const double*, double*, double*,
                                 const ConvGeometry&, double*, int64_t, cudaStream_t);

}  // namespace rill::cuda
