// Device code of pool2d and pool2d_grad (pool_cuda.h): grid-stride loops,
// one thread per output (forward) or per input element (gradient), and a
// block per plane for max pooling's gradient over a single window.
#include "ops/cuda_device_math.cuh"
#include "ops/nn/pool_cuda.h"

namespace rill::cuda {
namespace {

// Window [begin, end) of output position o along one axis, clipped to the
// input (pool2d_op.cc's WindowSpan).
template <class I>
struct Span {
  I begin;
  I end;
};

template <class I>
__device__ __forceinline__ Span<I> WindowSpan(I o, I stride, I pad, I kernel, I in) {
  const I start = o * stride - pad;
  return {start > 0 ? start : 0, start + kernel < in ? start + kernel : in};
}

// Offset in the plane of the first largest element of the window, as the
// CPU's ArgMax: `v > best` from the first element on, rows then columns.
template <class T, class I>
__device__ I ArgMax(const T* plane, I width, Span<I> ys, Span<I> xs) {
  I best = ys.begin * width + xs.begin;
  T best_value = plane[best];
  for (I y = ys.begin; y < ys.end; ++y) {
    for (I x = xs.begin; x < xs.end; ++x) {
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
template <class T, class I>
__device__ __forceinline__ T Area(const PoolGeometry& s, Span<I> ys, Span<I> xs) {
  return s.exclusive ? static_cast<T>((ys.end - ys.begin) * (xs.end - xs.begin))
                     : static_cast<T>(s.kernel_h * s.kernel_w);
}

// The geometry in the kernels' index type.
template <class I>
struct PoolDims {
  I height, width, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  explicit __device__ PoolDims(const PoolGeometry& s)
      : height(static_cast<I>(s.height)),
        width(static_cast<I>(s.width)),
        out_h(static_cast<I>(s.out_h)),
        out_w(static_cast<I>(s.out_w)),
        kernel_h(static_cast<I>(s.kernel_h)),
        kernel_w(static_cast<I>(s.kernel_w)),
        stride_h(static_cast<I>(s.stride_h)),
        stride_w(static_cast<I>(s.stride_w)),
        pad_h(static_cast<I>(s.pad_h)),
        pad_w(static_cast<I>(s.pad_w)) {}
};

template <class T, class I>
__global__ void PoolKernel(const T* x, T* out, PoolGeometry s, I n) {
  const PoolDims<I> d(s);
  const I in_plane = d.height * d.width;
  const I out_plane = d.out_h * d.out_w;
  for (I e = blockIdx.x * I(blockDim.x) + threadIdx.x; e < n; e += I(blockDim.x) * gridDim.x) {
    const I c = e / out_plane;
    const I i = e - c * out_plane;
    const I oy = i / d.out_w;
    const I ox = i - oy * d.out_w;
    const Span<I> ys = WindowSpan(oy, d.stride_h, d.pad_h, d.kernel_h, d.height);
    const Span<I> xs = WindowSpan(ox, d.stride_w, d.pad_w, d.kernel_w, d.width);
    const T* plane = x + c * in_plane;
    if (s.is_max) {
      out[e] = plane[ArgMax(plane, d.width, ys, xs)];
    } else {
      T sum = T(0);
      for (I y = ys.begin; y < ys.end; ++y) {
        for (I xx = xs.begin; xx < xs.end; ++xx) sum = Add(sum, plane[y * d.width + xx]);
      }
      out[e] = Div(sum, Area<T>(s, ys, xs));
    }
  }
}

// Output positions [first, last] along one axis whose windows cover input
// position v.
template <class I>
__device__ __forceinline__ void Covering(I v, I stride, I pad, I kernel, I out, I* first, I* last) {
  const I shifted = v + pad;  // o covers v iff o * stride <= shifted < o * stride + kernel
  *first = shifted < kernel ? 0 : (shifted - kernel) / stride + 1;
  const I l = shifted / stride;
  *last = l < out - 1 ? l : out - 1;
}

// dx[e] = sum, from 0, over the windows covering element e in the CPU's
// window order (output rows, then columns), of what each sends it.
template <class T, class I>
__global__ void PoolGradKernel(const T* x, const T* dout, T* dx, PoolGeometry s, I n) {
  const PoolDims<I> d(s);
  const I in_plane = d.height * d.width;
  const I out_plane = d.out_h * d.out_w;
  for (I e = blockIdx.x * I(blockDim.x) + threadIdx.x; e < n; e += I(blockDim.x) * gridDim.x) {
    const I c = e / in_plane;
    const I p = e - c * in_plane;
    const I y = p / d.width;
    const I xx = p - y * d.width;
    I oy0, oy1, ox0, ox1;
    Covering(y, d.stride_h, d.pad_h, d.kernel_h, d.out_h, &oy0, &oy1);
    Covering(xx, d.stride_w, d.pad_w, d.kernel_w, d.out_w, &ox0, &ox1);
    const T* plane = x + c * in_plane;
    const T* g_plane = dout + c * out_plane;
    T sum = T(0);
    for (I oy = oy0; oy <= oy1; ++oy) {
      const Span<I> ys = WindowSpan(oy, d.stride_h, d.pad_h, d.kernel_h, d.height);
      for (I ox = ox0; ox <= ox1; ++ox) {
        const Span<I> xs = WindowSpan(ox, d.stride_w, d.pad_w, d.kernel_w, d.width);
        const T g = g_plane[oy * d.out_w + ox];
        if (s.is_max) {
          if (ArgMax(plane, d.width, ys, xs) == p) sum = Add(sum, g);
        } else {
          sum = Add(sum, Div(g, Area<T>(s, ys, xs)));
        }
      }
    }
    dx[e] = sum;
  }
}

// Max pooling's gradient where windows do not overlap (stride >= kernel on
// both axes), after dx is cleared: one thread per window finds its ArgMax
// once and writes 0 + dOut there. Each input element is in at most one
// window, so this is the sum PoolGradKernel would form, without every
// element of a window searching it again.
template <class T, class I>
__global__ void DisjointMaxGradKernel(const T* x, const T* dout, T* dx, PoolGeometry s, I n) {
  const PoolDims<I> d(s);
  const I in_plane = d.height * d.width;
  const I out_plane = d.out_h * d.out_w;
  for (I e = blockIdx.x * I(blockDim.x) + threadIdx.x; e < n; e += I(blockDim.x) * gridDim.x) {
    const I c = e / out_plane;
    const I i = e - c * out_plane;
    const I oy = i / d.out_w;
    const I ox = i - oy * d.out_w;
    const Span<I> ys = WindowSpan(oy, d.stride_h, d.pad_h, d.kernel_h, d.height);
    const Span<I> xs = WindowSpan(ox, d.stride_w, d.pad_w, d.kernel_w, d.width);
    if (ys.begin >= ys.end || xs.begin >= xs.end) continue;  // a window wholly in the padding
    const T* plane = x + c * in_plane;
    dx[c * in_plane + ArgMax(plane, d.width, ys, xs)] = Add(T(0), dout[e]);
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
  const Span<int64_t> ys = WindowSpan<int64_t>(0, s.stride_h, s.pad_h, s.kernel_h, s.height);
  const Span<int64_t> xs = WindowSpan<int64_t>(0, s.stride_w, s.pad_w, s.kernel_w, s.width);
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
  if (n <= 0) return;
  // 32-bit index math where the input fits (see FitsInt32).
  if (FitsInt32(s.batch * s.channels * s.height * s.width) && FitsInt32(n)) {
    PoolKernel<T, int32_t><<<Blocks(n), kThreads, 0, stream>>>(x, out, s, static_cast<int32_t>(n));
  } else {
    PoolKernel<T, int64_t><<<Blocks(n), kThreads, 0, stream>>>(x, out, s, n);
  }
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
  } else if (s.is_max && s.stride_h >= s.kernel_h && s.stride_w >= s.kernel_w) {
    cudaMemsetAsync(dx, 0, static_cast<size_t>(n) * sizeof(T), stream);  // +0.0
    const int64_t windows = planes * s.out_h * s.out_w;
    if (FitsInt32(n) && FitsInt32(windows)) {
      DisjointMaxGradKernel<T, int32_t>
          <<<Blocks(windows), kThreads, 0, stream>>>(x, dout, dx, s, static_cast<int32_t>(windows));
    } else {
      DisjointMaxGradKernel<T, int64_t>
          <<<Blocks(windows), kThreads, 0, stream>>>(x, dout, dx, s, windows);
    }
  } else if (FitsInt32(n) && FitsInt32(planes * s.out_h * s.out_w)) {
    PoolGradKernel<T, int32_t>
        <<<Blocks(n), kThreads, 0, stream>>>(x, dout, dx, s, static_cast<int32_t>(n));
  } else {
    PoolGradKernel<T, int64_t><<<Blocks(n), kThreads, 0, stream>>>(x, dout, dx, s, n);
  }
}

template void Pool2d<float>(const float*, float*, const PoolGeometry&, cudaStream_t);
template void Pool2d<double>(const double*, double*, const PoolGeometry&, cudaStream_t);
template void Pool2dGrad<float>(const float*, const float*, float*, const PoolGeometry&,
                                cudaStream_t);
template void Pool2dGrad<double>(const double*, const double*, double*, const PoolGeometry&,
                                 cudaStream_t);

}  // namespace rill::cuda
