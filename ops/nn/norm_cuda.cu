// Device code of batch_norm and layer_norm (norm_cuda.h). One block per
// channel (batch_norm) or row (layer_norm), grid-stride over them: the block
// reduces its sums in shared memory, then its threads write the outputs of
// that channel or row. layer_norm's Scale@GRAD and Bias@GRAD: one thread per
// column, adding the rows in order.
#include "ops/cuda_device_math.cuh"
#include "ops/nn/norm_cuda.h"

namespace rill::cuda {
namespace {

// One block per channel or row, at most 65536 blocks (the kernels loop over the rest).
int GroupBlocks(int64_t groups) {
  return static_cast<int>(groups < 65536 ? (groups > 0 ? groups : 1) : 65536);
}

// The sum of every thread's `part`, returned to every thread. `red` is
// kThreads of shared memory; blockDim.x is kThreads (a power of two). Ends
// with a barrier, so `red` may be reused at once.
template <class T>
__device__ T BlockSum(T part, T* red) {
  red[threadIdx.x] = part;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s)
      red[threadIdx.x] = Add(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const T total = red[0];
  __syncthreads();
  return total;
}

// Index into X of element i of channel ch, the elements taken image by image.
__device__ __forceinline__ int64_t ChannelIndex(int64_t i, int64_t ch, int64_t c, int64_t hw) {
  const int64_t image = i / hw;
  return (image * c + ch) * hw + (i - image * hw);
}

template <class T>
__global__ void BatchNormKernel(const T* x, const T* scale, const T* bias, const T* mean_in,
                                const T* var_in, T* y, T* mean_out, T* var_out, T* saved_mean,
                                T* saved_inv_std, int64_t n, int64_t c, int64_t hw, T momentum,
                                T eps, bool is_test) {
  __shared__ T red[kThreads];
  const int64_t count = n * hw;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    // Every thread reads the running statistics before thread 0 writes them
    // (mean_out may be mean_in): the reductions below end with barriers, and
    // in inference the values written are the values read.
    const T running_mean = mean_in[ch];
    const T running_var = var_in[ch];
    T m = running_mean;
    T v = running_var;
    if (!is_test) {
      T s = 0;
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
        s = Add(s, x[ChannelIndex(i, ch, c, hw)]);
      m = Div(BlockSum(s, red), static_cast<T>(count));
      T q = 0;
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        const T u = Sub(x[ChannelIndex(i, ch, c, hw)], m);
        q = Add(q, Mul(u, u));
      }
      v = Div(BlockSum(q, red), static_cast<T>(count));
    }
    const T inv = Div(T(1), SqrtOf(Add(v, eps)));
    const T a = Mul(scale[ch], inv);
    const T k = Sub(bias[ch], Mul(m, a));
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const int64_t at = ChannelIndex(i, ch, c, hw);
      y[at] = Add(Mul(a, x[at]), k);
    }
    if (threadIdx.x == 0) {
      if (is_test) {
        mean_out[ch] = running_mean;
        var_out[ch] = running_var;
      } else {
        const T keep = Sub(T(1), momentum);
        mean_out[ch] = Add(Mul(momentum, running_mean), Mul(keep, m));
        var_out[ch] = Add(Mul(momentum, running_var), Mul(keep, v));
      }
      saved_mean[ch] = m;
      saved_inv_std[ch] = inv;
    }
    __syncthreads();
  }
}

template <class T>
__global__ void BatchNormGradKernel(const T* x, const T* scale, const T* saved_mean,
                                    const T* saved_inv_std, const T* dy, T* dx, T* dscale, T* dbias,
                                    int64_t n, int64_t c, int64_t hw, bool is_test) {
  __shared__ T red[kThreads];
  const int64_t count = n * hw;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    const T m = saved_mean[ch];
    const T inv = saved_inv_std[ch];
    T s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const int64_t at = ChannelIndex(i, ch, c, hw);
      s1 = Add(s1, dy[at]);
      s2 = Add(s2, Mul(dy[at], Sub(x[at], m)));
    }
    const T sum_dy = BlockSum(s1, red);
    const T sum_dy_xmu = BlockSum(s2, red);
    if (threadIdx.x == 0) {
      if (dscale != nullptr) dscale[ch] = Mul(sum_dy_xmu, inv);
      if (dbias != nullptr) dbias[ch] = sum_dy;
    }
    if (dx != nullptr) {
      const T total = static_cast<T>(count);
      const T a = Mul(scale[ch], inv);
      const T slope = is_test ? T(0) : Div(Mul(Mul(Mul(-a, inv), inv), sum_dy_xmu), total);
      const T k = is_test ? T(0) : Sub(Div(Mul(-a, sum_dy), total), Mul(slope, m));
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        const int64_t at = ChannelIndex(i, ch, c, hw);
        dx[at] = is_test ? Add(Mul(a, dy[at]), k) : Add(Add(Mul(a, dy[at]), Mul(slope, x[at])), k);
      }
    }
    __syncthreads();
  }
}

template <class T>
__global__ void LayerNormKernel(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var,
                                int64_t rows, int64_t cols, T eps) {
  __shared__ T red[kThreads];
  const T count = static_cast<T>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s = Add(s, xr[j]);
    const T m = Div(BlockSum(s, red), count);
    T q = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const T u = Sub(xr[j], m);
      q = Add(q, Mul(u, u));
    }
    const T v = Div(BlockSum(q, red), count);
    const T inv = Div(T(1), SqrtOf(Add(v, eps)));
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      T out = Mul(Sub(xr[j], m), inv);
      if (scale != nullptr) out = Mul(out, scale[j]);
      if (bias != nullptr) out = Add(out, bias[j]);
      yr[j] = out;
    }
    if (threadIdx.x == 0) {
      mean[r] = m;
      var[r] = v;
    }
    __syncthreads();
  }
}

template <class T>
__global__ void LayerNormGradRowsKernel(const T* x, const T* scale, const T* mean, const T* var,
                                        const T* dy, T* dx, int64_t rows, int64_t cols, T eps) {
  __shared__ T red[kThreads];
  const T count = static_cast<T>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const T m = mean[r];
    const T inv = Div(T(1), SqrtOf(Add(var[r], eps)));
    T s1 = 0, s2 = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const T g = scale != nullptr ? Mul(dyr[j], scale[j]) : dyr[j];
      s1 = Add(s1, g);
      s2 = Add(s2, Mul(g, Mul(Sub(xr[j], m), inv)));
    }
    const T g_mean = Div(BlockSum(s1, red), count);
    const T gx_mean = Div(BlockSum(s2, red), count);
    // Each thread writes only the columns it read: dx may be dy.
    T* dxr = dx + r * cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const T g = scale != nullptr ? Mul(dyr[j], scale[j]) : dyr[j];
      const T xhat = Mul(Sub(xr[j], m), inv);
      dxr[j] = Mul(inv, Sub(Sub(g, g_mean), Mul(xhat, gx_mean)));
    }
    __syncthreads();
  }
}

// One thread per column, the rows added in order (as the CPU does).
template <class T>
__global__ void LayerNormGradColumnsKernel(const T* x, const T* mean, const T* var, const T* dy,
                                           T* dscale, T* dbias, int64_t rows, int64_t cols, T eps) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < cols;
       j += int64_t{blockDim.x} * gridDim.x) {
    T ds = 0, db = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T inv = Div(T(1), SqrtOf(Add(var[r], eps)));
      const T xhat = Mul(Sub(x[r * cols + j], mean[r]), inv);
      const T d = dy[r * cols + j];
      ds = Add(ds, Mul(d, xhat));
      db = Add(db, d);
    }
    if (dscale != nullptr) dscale[j] = ds;
    if (dbias != nullptr) dbias[j] = db;
  }
}

}  // namespace

template <class T>
void BatchNorm(const T* x, const T* scale, const T* bias, const T* mean_in, const T* var_in, T* y,
               T* mean_out, T* var_out, T* saved_mean, T* saved_inv_std, int64_t n, int64_t c,
               int64_t hw, T momentum, T epsilon, bool is_test, cudaStream_t stream) {
  if (c <= 0) return;
  BatchNormKernel<T><<<GroupBlocks(c), kThreads, 0, stream>>>(
      x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv_std, n, c, hw,
      momentum, epsilon, is_test);
}

template <class T>
void BatchNormGrad(const T* x, const T* scale, const T* saved_mean, const T* saved_inv_std,
                   const T* dy, T* dx, T* dscale, T* dbias, int64_t n, int64_t c, int64_t hw,
                   bool is_test, cudaStream_t stream) {
  if (c <= 0) return;
  BatchNormGradKernel<T><<<GroupBlocks(c), kThreads, 0, stream>>>(
      x, scale, saved_mean, saved_inv_std, dy, dx, dscale, dbias, n, c, hw, is_test);
}

template <class T>
void LayerNorm(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var, int64_t rows,
               int64_t cols, T epsilon, cudaStream_t stream) {
  if (rows <= 0) return;
  LayerNormKernel<T><<<GroupBlocks(rows), kThreads, 0, stream>>>(x, scale, bias, y, mean, var, rows,
                                                                 cols, epsilon);
}

template <class T>
void LayerNormGrad(const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx,
                   T* dscale, T* dbias, int64_t rows, int64_t cols, T epsilon,
                   cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  // Scale@GRAD and Bias@GRAD first: they read dy, which dx may overwrite.
  if (dscale != nullptr || dbias != nullptr) {
    LayerNormGradColumnsKernel<T><<<Blocks(cols), kThreads, 0, stream>>>(
        x, mean, var, dy, dscale, dbias, rows, cols, epsilon);
  }
  if (dx != nullptr) {
    LayerNormGradRowsKernel<T><<<GroupBlocks(rows), kThreads, 0, stream>>>(x, scale, mean, var, dy,
                                                                           dx, rows, cols, epsilon);
  }
}

#define RILL_NORM_INSTANTIATE(T)                                                                   \
  template void BatchNorm<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, T*, T*, \
                             int64_t, int64_t, int64_t, T, T, bool, cudaStream_t);                 \
  template void BatchNormGrad<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*,     \
                                 int64_t, int64_t, int64_t, bool, cudaStream_t);                   \
  template void LayerNorm<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, T,        \
                             cudaStream_t);                                                        \
  template void LayerNormGrad<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*,     \
                                 int64_t, int64_t, T, cudaStream_t)
RILL_NORM_INSTANTIATE(float);
RILL_NORM_INSTANTIATE(double);
#undef RILL_NORM_INSTANTIATE

}  // namespace rill::cuda
