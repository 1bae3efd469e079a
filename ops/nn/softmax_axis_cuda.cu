// Device code of softmax along any axis with an optional mask, and of its
// gradient (softmax_axis_cuda.h). One block per row (grid-stride over rows):
// the row's elements lie rows.inner apart, its mask values
// mask_index.axis_stride apart. The block's threads share the elementwise
// work and the max; thread 0 finds the first kept element and takes the row
// sum left to right over the kept ones, as the CPU loop does.
#include "ops/cuda_device_math.cuh"
#include "ops/nn/softmax_axis_cuda.h"

namespace rill::cuda {
namespace {

// One block per row, at most 65536 blocks (the kernels loop over the rest).
int AxisRowBlocks(int64_t rows) { return static_cast<int>(rows < 65536 ? rows : 65536); }

// std::max(a, b) exactly, as the CPU's loop takes it.
template <class T>
__device__ __forceinline__ T MaxOf(T a, T b) {
  return a < b ? b : a;
}

template <class T>
__global__ void SoftmaxAxisKernel(const T* x, T* y, SoftmaxRows rows, const T* mask,
                                  SoftmaxMaskIndex mask_index) {
  __shared__ T red[kThreads];
  __shared__ T shared_sum;
  __shared__ int64_t shared_first;
  const int64_t len = rows.len;
  const int64_t stride = rows.inner;
  const int64_t mask_stride = mask_index.axis_stride;
  for (int64_t r = blockIdx.x; r < rows.count(); r += gridDim.x) {
    const int64_t start = rows.Start(r);
    const T* xr = x + start;
    T* yr = y + start;
    const T* mr = mask == nullptr ? nullptr : mask + mask_index.Offset(start);
    const auto kept = [&](int64_t j) { return mr == nullptr || mr[j * mask_stride] != T(0); };
    if (threadIdx.x == 0) {
      int64_t first = 0;
      while (first < len && !kept(first)) ++first;
      shared_first = first;
    }
    __syncthreads();
    const int64_t first = shared_first;
    if (first == len) {  // masked everywhere: zeros
      for (int64_t j = threadIdx.x; j < len; j += blockDim.x) yr[j * stride] = T(0);
      __syncthreads();
      continue;
    }
    // The max from xr[first], as the CPU's loop (a NaN there stays; others are skipped).
    T m = xr[first * stride];
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      if (kept(j)) m = MaxOf(m, xr[j * stride]);
    }
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (static_cast<int>(threadIdx.x) < s) {
        red[threadIdx.x] = MaxOf(red[threadIdx.x], red[threadIdx.x + s]);
      }
      __syncthreads();
    }
    const T max = red[0];
    __syncthreads();  // all have read red before the next row writes it
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      yr[j * stride] = kept(j) ? ExpOf(Sub(xr[j * stride], max)) : T(0);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      T sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        if (kept(j)) sum = Add(sum, yr[j * stride]);
      }
      shared_sum = sum;
    }
    __syncthreads();
    const T inv = Div(T(1), shared_sum);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
      yr[j * stride] = Mul(yr[j * stride], inv);
    __syncthreads();
  }
}

template <class T>
__global__ void SoftmaxAxisGradKernel(const T* y, const T* dy, T* dx, SoftmaxRows rows) {
  __shared__ T shared_dot;
  const int64_t len = rows.len;
  const int64_t stride = rows.inner;
  for (int64_t r = blockIdx.x; r < rows.count(); r += gridDim.x) {
    const int64_t start = rows.Start(r);
    const T* yr = y + start;
    const T* dyr = dy + start;
    T* gr = dx + start;
    if (threadIdx.x == 0) {
      T dot = 0;
      for (int64_t j = 0; j < len; ++j) dot = Add(dot, Mul(dyr[j * stride], yr[j * stride]));
      shared_dot = dot;
    }
    __syncthreads();
    const T dot = shared_dot;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      gr[j * stride] = Mul(Sub(dyr[j * stride], dot), yr[j * stride]);
    }
    __syncthreads();
  }
}

}  // namespace

template <class T>
void SoftmaxAxis(const T* x, T* y, SoftmaxRows rows, const T* mask, SoftmaxMaskIndex mask_index,
                 cudaStream_t stream) {
  if (rows.count() > 0 && rows.len > 0) {
    SoftmaxAxisKernel<T>
        <<<AxisRowBlocks(rows.count()), kThreads, 0, stream>>>(x, y, rows, mask, mask_index);
  }
}

template <class T>
void SoftmaxAxisGrad(const T* y, const T* dy, T* dx, SoftmaxRows rows, cudaStream_t stream) {
  if (rows.count() > 0 && rows.len > 0) {
    SoftmaxAxisGradKernel<T><<<AxisRowBlocks(rows.count()), kThreads, 0, stream>>>(y, dy, dx, rows);
  }
}

template void SoftmaxAxis<float>(const float*, float*, SoftmaxRows, const float*, SoftmaxMaskIndex,
                                 cudaStream_t);
template void SoftmaxAxis<double>(const double*, double*, SoftmaxRows, const double*,
                                  SoftmaxMaskIndex, cudaStream_t);
template void SoftmaxAxisGrad<float>(const float*, const float*, float*, SoftmaxRows, cudaStream_t);
template void SoftmaxAxisGrad<double>(const double*, const double*, double*, SoftmaxRows,
                                      cudaStream_t);

}  // namespace rill::cuda
