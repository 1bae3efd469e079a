// Device code of lookup_table, lookup_table_grad, dropout and dropout_grad
// (embedding_dropout_cuda.h). Grid-stride loops over elements, one thread per
// element (or per column of a group of rows), so one launch covers any size.
#include "ops/cuda_device_math.cuh"
#include "ops/nn/embedding_dropout_cuda.h"

namespace rill::cuda {
namespace {

template <class T>
__global__ void LookupRowsKernel(const T* table, const int64_t* ids, int64_t n, int64_t width,
                                 int64_t padding_idx, T* out) {
  const int64_t total = n * width;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t i = e / width;
    const int64_t j = e - i * width;
    const int64_t row = ids[i];
    out[e] = (padding_idx >= 0 && row == padding_idx) ? T(0) : table[row * width + j];
  }
}

template <class T>
__global__ void GatherRowsKernel(const T* src, const int64_t* positions, int64_t count,
                                 int64_t width, T* out) {
  const int64_t total = count * width;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t k = e / width;
    const int64_t j = e - k * width;
    out[e] = src[positions[k] * width + j];
  }
}

// One thread per (group, column): 0 + dy[p0][j] + dy[p1][j] + ..., left to
// right, as the CPU's `dst[j] += src[j]` over the ids in order.
template <class T>
__global__ void SumRowsInOrderKernel(const T* dy, const int64_t* rows, const int64_t* offsets,
                                     const int64_t* positions, int64_t groups, int64_t width,
                                     T* dw) {
  const int64_t total = groups * width;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t g = e / width;
    const int64_t j = e - g * width;
    T sum = T(0);
    for (int64_t p = offsets[g]; p < offsets[g + 1]; ++p)
      sum = Add(sum, dy[positions[p] * width + j]);
    dw[rows[g] * width + j] = sum;
  }
}

template <class T>
__global__ void MultiplyByMaskKernel(const T* x, const T* mask, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = Mul(x[i], mask[i]);
  }
}

template <class T>
__global__ void ScaleAndFillMaskKernel(const T* x, T keep, T* out, T* mask, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = Mul(x[i], keep);
    if (mask != nullptr) mask[i] = keep;
  }
}

}  // namespace

template <class T>
void LookupRows(const T* table, const int64_t* ids, int64_t n, int64_t width, int64_t padding_idx,
                T* out, cudaStream_t stream) {
  const int64_t total = n * width;
  if (total > 0) {
    LookupRowsKernel<T>
        <<<Blocks(total), kThreads, 0, stream>>>(table, ids, n, width, padding_idx, out);
  }
}

template <class T>
void GatherRows(const T* src, const int64_t* positions, int64_t count, int64_t width, T* out,
                cudaStream_t stream) {
  const int64_t total = count * width;
  if (total > 0) {
    GatherRowsKernel<T><<<Blocks(total), kThreads, 0, stream>>>(src, positions, count, width, out);
  }
}

template <class T>
void SumRowsInOrder(const T* dy, const int64_t* rows, const int64_t* offsets,
                    const int64_t* positions, int64_t groups, int64_t width, T* dw,
                    cudaStream_t stream) {
  const int64_t total = groups * width;
  if (total > 0) {
    SumRowsInOrderKernel<T>
        <<<Blocks(total), kThreads, 0, stream>>>(dy, rows, offsets, positions, groups, width, dw);
  }
}

template <class T>
void MultiplyByMask(const T* x, const T* mask, T* out, int64_t n, cudaStream_t stream) {
  if (n > 0) MultiplyByMaskKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, mask, out, n);
}

template <class T>
void ScaleAndFillMask(const T* x, T keep, T* out, T* mask, int64_t n, cudaStream_t stream) {
  if (n > 0) ScaleAndFillMaskKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, keep, out, mask, n);
}

template void LookupRows<float>(const float*, const int64_t*, int64_t, int64_t, int64_t, float*,
                                cudaStream_t);
template void LookupRows<double>(const double*, const int64_t*, int64_t, int64_t, int64_t, double*,
                                 cudaStream_t);
template void GatherRows<float>(const float*, const int64_t*, int64_t, int64_t, float*,
                                cudaStream_t);
template void GatherRows<double>(const double*, const int64_t*, int64_t, int64_t, double*,
                                 cudaStream_t);
template void SumRowsInOrder<float>(const float*, const int64_t*, const int64_t*, const int64_t*,
                                    int64_t, int64_t, float*, cudaStream_t);
template void SumRowsInOrder<double>(const double*, const int64_t*, const int64_t*, const int64_t*,
                                     int64_t, int64_t, double*, cudaStream_t);
template void MultiplyByMask<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void MultiplyByMask<double>(const double*, const double*, double*, int64_t, cudaStream_t);
template void ScaleAndFillMask<float>(const float*, float, float*, float*, int64_t, cudaStream_t);
template void ScaleAndFillMask<double>(const double*, double, double*, double*, int64_t,
                                       cudaStream_t);

}  // namespace rill::cuda
