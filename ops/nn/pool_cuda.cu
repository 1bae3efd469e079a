// Device code of pool2d and pool2d_grad (pool_cuda.h): grid-stride loops,
// one thread per output (forward) or per input element (gradient), and a
// block per plane for max pooling's gradient over a single window.
#include "ops/cuda_device_math.cuh"
#include "ops/nn/pool_cuda.h"

namespace rill::cuda {
namespace {

// Window [begin, end) of output position o along one axis, clipped to the
// input (pool2d_op.cc's WindowSpan).
struct Span {
  int64_t begin;
  int64_t end;
};

__device__ __forceinline__ Span WindowSpan(int64_t o, int64_t stride, int64_t pad, int64_t kernel,
                                           int64_t in) {
  const int64_t start = o * stride - pad;
  return {start > 0 ? start : 0, start + kernel < in ? start + kernel : in};
}

// Offset in the plane of the first largest element of the window, as the
// CPU's ArgMax: `v > best` from the first element on, rows then columns.
template <class T>
__device__ int64_t ArgMax(const T* plane, int64_t width, Span ys, Span xs) {
  int64_t best = ys.begin * width + xs.begin;
  T best_value = plane[best];
  for (int64_t y = ys.begin; y < ys.end; ++y) {
    for (int64_t x = xs.begin; x < xs.end; ++x) {
      const T v = plane[y * width + x];
      if (v > best_value) {
        best = y * width + x;
        best_value = v;
      }
    }
  }
  return best;
}

// The divisor of an average over the window.
template <class T>
__device__ __forceinline__ T Area(const PoolGeometry& s, Span ys, Span xs) {
  return s.exclusive ? static_cast<T>((ys.end - ys.begin) * (xs.end - xs.begin))
                     : static_cast<T>(s.kernel_h * s.kernel_w);
}

template <class T>
__global__ void PoolKernel(const T* x, T* out, PoolGeometry s, int64_t n) {
  const int64_t in_plane = s.height * s.width;
  const int64_t out_plane = s.out_h * s.out_w;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t c = e / out_plane;
    const int64_t i = e - c * out_plane;
    const int64_t oy = i / s.out_w;
    const int64_t ox = i - oy * s.out_w;
    const Span ys = WindowSpan(oy, s.stride_h, s.pad_h, s.kernel_h, s.height);
    const Span xs = WindowSpan(ox, s.stride_w, s.pad_w, s.kernel_w, s.width);
    const T* plane = x + c * in_plane;
    if (s.is_max) {
      out[e] = plane[ArgMax(plane, s.width, ys, xs)];
    } else {
      T sum = T(0);
      for (int64_t y = ys.begin; y < ys.end; ++y) {
        for (int64_t xx = xs.begin; xx < xs.end; ++xx) sum = Add(sum, plane[y * s.width + xx]);
      }
      out[e] = Div(sum, Area<T>(s, ys, xs));
    }
  }
}

// Output positions [first, last] along one axis whose windows cover input
// position v.
__device__ __forceinline__ void Covering(int64_t v, int64_t stride, int64_t pad, int64_t kernel,
                                         int64_t out, int64_t* first, int64_t* last) {
  const int64_t shifted = v + pad;  // o covers v iff o * stride <= shifted < o * stride + kernel
  *first = shifted < kernel ? 0 : (shifted - kernel) / stride + 1;
  const int64_t l = shifted / stride;
  *last = l < out - 1 ? l : out - 1;
}

// dx[e] = sum, from 0, over the windows covering element e in the CPU's
// window order (output rows, then columns), of what each sends it.
template <class T>
__global__ void PoolGradKernel(const T* x, const T* dout, T* dx, PoolGeometry s, int64_t n) {
  const int64_t in_plane = s.height * s.width;
  const int64_t out_plane = s.out_h * s.out_w;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t c = e / in_plane;
    const int64_t p = e - c * in_plane;
    const int64_t y = p / s.width;
    const int64_t xx = p - y * s.width;
    int64_t oy0, oy1, ox0, ox1;
    Covering(y, s.stride_h, s.pad_h, s.kernel_h, s.out_h, &oy0, &oy1);
    Covering(xx, s.stride_w, s.pad_w, s.kernel_w, s.out_w, &ox0, &ox1);
    const T* plane = x + c * in_plane;
    const T* d = dout + c * out_plane;
    T sum = T(0);
    for (int64_t oy = oy0; oy <= oy1; ++oy) {
      const Span ys = WindowSpan(oy, s.stride_h, s.pad_h, s.kernel_h, s.height);
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        const Span xs = WindowSpan(ox, s.stride_w, s.pad_w, s.kernel_w, s.width);
        const T g = d[oy * s.out_w + ox];
        if (s.is_max) {
          if (ArgMax(plane, s.width, ys, xs) == p) sum = Add(sum, g);
        } else {
          sum = Add(sum, Div(g, Area<T>(s, ys, xs)));
        }
      }
    }
    dx[e] = sum;
  }
}

// Max pooling's gradient where each plane has one window (out_h = out_w =
// 1: global pooling): a block per plane finds the CPU's ArgMax in parallel
// (a NaN first element wins; otherwise NaNs never do, and the largest of the
// rest wins, the earliest among equals: what the CPU's scan leaves), then
// writes the plane: dOut at the winner (added to 0, as on the CPU), 0
// elsewhere.
template <class T>
__global__ void SingleWindowMaxGradKernel(const T* x, const T* dout, T* dx, PoolGeometry s) {
  __shared__ T red_value[kThreads];
  __shared__ int64_t red_index[kThreads];
  const int64_t in_plane = s.height * s.width;
  const Span ys = WindowSpan(0, s.stride_h, s.pad_h, s.kernel_h, s.height);
  const Span xs = WindowSpan(0, s.stride_w, s.pad_w, s.kernel_w, s.width);
  const int64_t window_w = xs.end - xs.begin;
  const int64_t count = (ys.end - ys.begin) * window_w;
  const int64_t first = ys.begin * s.width + xs.begin;
  const unsigned tid = threadIdx.x;
  const int64_t planes = s.batch * s.channels;
  for (int64_t c = blockIdx.x; c < planes; c += gridDim.x) {
    const T* plane = x + c * in_plane;
    const bool nan_first = isnan(plane[first]);
    int64_t best = -1;  // none yet
    T best_value = T(0);
    if (!nan_first) {
      for (int64_t k = tid; k < count; k += blockDim.x) {  // increasing offsets
        const int64_t at = (ys.begin + k / window_w) * s.width + xs.begin + k % window_w;
        const T v = plane[at];
        if (isnan(v)) continue;
        if (best < 0 || v > best_value) {
          best = at;
          best_value = v;
        }
      }
    }
    red_value[tid] = best_value;
    red_index[tid] = best;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
      if (tid < half) {
        const int64_t bi = red_index[tid + half];
        const T bv = red_value[tid + half];
        const int64_t ai = red_index[tid];
        const T av = red_value[tid];
        const bool take_b = bi >= 0 && (ai < 0 || bv > av || (!(av > bv) && bi < ai));
        if (take_b) {
          red_index[tid] = bi;
          red_value[tid] = bv;
        }
      }
      __syncthreads();
    }
    const int64_t winner = nan_first ? first : red_index[0];
    const T g = dout[c];
    T* plane_dx = dx + c * in_plane;
    for (int64_t p = tid; p < in_plane; p += blockDim.x) {
      plane_dx[p] = p == winner ? Add(T(0), g) : T(0);
    }
    __syncthreads();  // red_index[0] read before the next plane writes it
  }
}

}  // namespace

template <class T>
void Pool2d(const T* x, T* out, const PoolGeometry& s, cudaStream_t stream) {
  const int64_t n = s.batch * s.channels * s.out_h * s.out_w;
  if (n > 0) PoolKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, out, s, n);
}

template <class T>
void Pool2dGrad(const T* x, const T* dout, T* dx, const PoolGeometry& s, cudaStream_t stream) {
  const int64_t planes = s.batch * s.channels;
  const int64_t n = planes * s.height * s.width;
  if (n == 0) return;
  if (dout == nullptr) {
    cudaMemsetAsync(dx, 0, static_cast<size_t>(n) * sizeof(T), stream);  // +0.0
  } else if (s.is_max && s.out_h == 1 && s.out_w == 1) {
    const int blocks = static_cast<int>(planes < 65536 ? planes : 65536);
    SingleWindowMaxGradKernel<T><<<blocks, kThreads, 0, stream>>>(x, dout, dx, s);
  } else {
    PoolGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, dout, dx, s, n);
  }
}

template void Pool2d<float>(const float*, float*, const PoolGeometry&, cudaStream_t);
template void Pool2d<double>(const double*, double*, const PoolGeometry&, cudaStream_t);
template void Pool2dGrad<float>(const float*, const float*, float*, const PoolGeometry&,
                                cudaStream_t);
template void Pool2dGrad<double>(const double*, const double*, double*, const PoolGeometry&,
                                 cudaStream_t);

}  // namespace rill::cuda
