// Device code of softmax, softmax_with_cross_entropy, cross_entropy and
// accuracy (softmax_cuda.h). Row kernels run one block per row (grid-stride
// over rows); the block's threads share the elementwise work (exp, log,
// scaling) and thread 0 takes each row sum left to right, as the CPU loops
// do, so the sums round exactly as on the CPU.
#include "ops/cuda_device_math.cuh"
#include "ops/nn/softmax_cuda.h"

namespace rill::cuda {
namespace {

// One block per row, at most 65536 blocks (the kernels loop over the rest).
int RowBlocks(int64_t rows) { return static_cast<int>(rows < 65536 ? rows : 65536); }

// std::max(a, b) exactly: (a < b) ? b : a (a NaN b is never taken; a NaN a stays).
template <class T>
__device__ __forceinline__ T MaxOf(T a, T b) {
  return a < b ? b : a;
}

// The CPU kernels' floor on probabilities (cross_entropy_op.cc).
template <class T>
__device__ __forceinline__ T MinProbability() {
  return T(1e-20);
}

__device__ __forceinline__ void NoteBadRow(int64_t* bad_row, int64_t r) {
  atomicMin(reinterpret_cast<unsigned long long*>(bad_row), static_cast<unsigned long long>(r));
}

// max over xr[0, cols) as the CPU's loop `max = std::max(max, xr[j])` from
// xr[0]: every thread starts from xr[0], so a NaN there gives NaN (as on the
// CPU) and otherwise NaNs are skipped and the largest other value wins (max
// is exact, so the order does not matter). cols > 0. Returned to every
// thread; `red` is kThreads of shared memory. Ends with a barrier, so the
// caller may then overwrite xr.
template <class T>
__device__ T RowMax(const T* xr, int64_t cols, T* red) {
  T m = xr[0];
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = MaxOf(m, xr[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s)
      red[threadIdx.x] = MaxOf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const T result = red[0];
  __syncthreads();
  return result;
}

// yr = exp(xr - max) / sum, the sum left to right, then yr *= 1 / sum (the
// CPU's order); returns the sum to every thread. yr may be xr. Ends with a
// barrier.
template <class T>
__device__ T SoftmaxRow(const T* xr, T* yr, int64_t cols, T max, T* shared_sum) {
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = ExpOf(Sub(xr[j], max));
  __syncthreads();
  if (threadIdx.x == 0) {
    T sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum = Add(sum, yr[j]);
    *shared_sum = sum;
  }
  __syncthreads();
  const T sum = *shared_sum;
  const T inv = Div(T(1), sum);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = Mul(yr[j], inv);
  __syncthreads();
  return sum;
}

template <class T>
__global__ void SoftmaxKernel(const T* x, T* y, int64_t rows, int64_t cols) {
  __shared__ T red[kThreads];
  __shared__ T sum;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const T max = RowMax(xr, cols, red);
    SoftmaxRow(xr, yr, cols, max, &sum);
  }
}

template <class T>
__global__ void SoftmaxGradKernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols) {
  __shared__ T shared_dot;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T* gr = dx + r * cols;
    if (threadIdx.x == 0) {
      T dot = 0;
      for (int64_t j = 0; j < cols; ++j) dot = Add(dot, Mul(dyr[j], yr[j]));
      shared_dot = dot;
    }
    __syncthreads();
    const T dot = shared_dot;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) gr[j] = Mul(Sub(dyr[j], dot), yr[j]);
    __syncthreads();
  }
}

template <class T>
__global__ void SoftmaxWithCrossEntropyKernel(const T* logits, const T* soft_label,
                                              const int64_t* hard_label, T* softmax, T* loss,
                                              int64_t rows, int64_t cols, int64_t* bad_row) {
  __shared__ T red[kThreads];
  __shared__ T shared_sum;
  __shared__ T shared_label_sum;
  __shared__ T shared_label_dot;
  __shared__ bool shared_bad;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = logits + r * cols;
    T* sr = softmax + r * cols;
    // The label terms are read before Softmax is written (Softmax may be Logits).
    if (threadIdx.x == 0) {
      T label_sum = 1;
      T label_dot = 0;
      bool bad = false;
      if (soft_label != nullptr) {
        const T* lr = soft_label + r * cols;
        label_sum = 0;
        for (int64_t j = 0; j < cols; ++j) {
          label_sum = Add(label_sum, lr[j]);
          label_dot = Add(label_dot, Mul(lr[j], xr[j]));
        }
      } else {
        const int64_t l = hard_label[r];
        bad = l < 0 || l >= cols;
        if (bad) {
          NoteBadRow(bad_row, r);
        } else {
          label_dot = xr[l];
        }
      }
      shared_label_sum = label_sum;
      shared_label_dot = label_dot;
      shared_bad = bad;
    }
    __syncthreads();
    const T label_sum = shared_label_sum;
    const T label_dot = shared_label_dot;
    const bool bad = shared_bad;
    __syncthreads();    // all have read the shared values before the next row writes them
    if (bad) {  // the glue reports it at the stream's Synchronize; the row adds nothing
      if (threadIdx.x == 0) loss[r] = T(0);
      continue;
    }
    if (cols == 0) {    // soft labels only: nothing to predict, no loss
      if (threadIdx.x == 0) loss[r] = T(0);
      continue;
    }
    const T max = RowMax(xr, cols, red);
    const T sum = SoftmaxRow(xr, sr, cols, max, &shared_sum);
    if (threadIdx.x == 0) {
      const T log_sum_exp = Add(max, LogOf(sum));
      loss[r] = Sub(Mul(label_sum, log_sum_exp), label_dot);
    }
  }
}

template <class T>
__global__ void SoftLabelGradKernel(const T* softmax, const T* label, const T* dloss, T* dlogits,
                                    int64_t rows, int64_t cols) {
  __shared__ T shared_ds;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* sr = softmax + r * cols;
    const T* lr = label + r * cols;
    T* gr = dlogits + r * cols;
    const T d = dloss[r];
    if (threadIdx.x == 0) {
      T label_sum = 0;
      for (int64_t j = 0; j < cols; ++j) label_sum = Add(label_sum, lr[j]);
      shared_ds = Mul(d, label_sum);
    }
    __syncthreads();
    const T ds = shared_ds;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      gr[j] = Sub(Mul(ds, sr[j]), Mul(d, lr[j]));
    }
    __syncthreads();
  }
}

// gr[j] = d * sr[j], then gr[label] -= d (the same roundings as the CPU's
// two steps).
template <class T>
__global__ void HardLabelGradKernel(const T* softmax, const int64_t* label, const T* dloss,
                                    T* dlogits, int64_t n, int64_t cols, int64_t* bad_row) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t r = i / cols;
    const int64_t j = i - r * cols;
    const int64_t l = label[r];
    if (l < 0 || l >= cols) {  // reported later (the glue); no gradient from this row
      if (j == 0) NoteBadRow(bad_row, r);
      dlogits[i] = T(0);
      continue;
    }
    const T d = dloss[r];
    const T g = Mul(d, softmax[i]);
    dlogits[i] = j == l ? Sub(g, d) : g;
  }
}

// y[r] = -sum_j label_j * log(max(x_j, eps)): the block computes the terms a
// chunk of kThreads at a time and thread 0 adds them left to right.
template <class T>
__global__ void SoftCrossEntropyKernel(const T* x, const T* label, T* y, int64_t rows,
                                       int64_t cols) {
  __shared__ T terms[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* lr = label + r * cols;
    T sum = 0;  // thread 0's
    for (int64_t base = 0; base < cols; base += blockDim.x) {
      const int64_t j = base + threadIdx.x;
      if (j < cols) terms[threadIdx.x] = Mul(lr[j], LogOf(MaxOf(xr[j], MinProbability<T>())));
      __syncthreads();
      if (threadIdx.x == 0) {
        const int64_t count = cols - base < blockDim.x ? cols - base : int64_t{blockDim.x};
        for (int64_t k = 0; k < count; ++k) sum = Add(sum, terms[k]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) y[r] = -sum;
  }
}

template <class T>
__global__ void HardCrossEntropyKernel(const T* x, const int64_t* label, T* y, int64_t rows,
                                       int64_t cols, int64_t* bad_row) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x) {
    const int64_t l = label[r];
    if (l < 0 || l >= cols) {  // reported later (the glue); the row adds nothing
      NoteBadRow(bad_row, r);
      y[r] = T(0);
      continue;
    }
    y[r] = -LogOf(MaxOf(x[r * cols + l], MinProbability<T>()));
  }
}

template <class T>
__global__ void SoftCrossEntropyGradKernel(const T* x, const T* label, const T* dy, T* dx,
                                           int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const T d = -dy[i / cols];
    dx[i] = Div(Mul(d, label[i]), MaxOf(x[i], MinProbability<T>()));
  }
}

// dx is zero already; writes -dy / max(x, eps) at each row's label.
template <class T>
__global__ void HardCrossEntropyGradKernel(const T* x, const int64_t* label, const T* dy, T* dx,
                                           int64_t rows, int64_t cols, int64_t* bad_row) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x) {
    const int64_t l = label[r];
    if (l < 0 || l >= cols) {
      NoteBadRow(bad_row, r);
      continue;
    }
    dx[r * cols + l] = Div(-dy[r], MaxOf(x[r * cols + l], MinProbability<T>()));
  }
}

// One block: hits counted per thread, summed exactly (integers).
__global__ void AccuracyKernel(const int64_t* indices, const int64_t* label, int64_t rows,
                               int64_t k, float* accuracy, int64_t* correct, int64_t* total) {
  __shared__ int64_t red[kThreads];
  int64_t hits = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const int64_t* row = indices + r * k;
    bool hit = false;
    for (int64_t j = 0; j < k; ++j) hit |= row[j] == label[r];
    hits += hit ? 1 : 0;
  }
  red[threadIdx.x] = hits;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const int64_t c = red[0];
    accuracy[0] =
        rows == 0 ? 0.0f
                  : __double2float_rn(__ddiv_rn(static_cast<double>(c), static_cast<double>(rows)));
    if (correct != nullptr) correct[0] = c;
    if (total != nullptr) total[0] = rows;
  }
}

// Sets *bad_row to kNoBadLabelRow (every byte 0x7f).
void ResetBadRow(int64_t* bad_row, cudaStream_t stream) {
  if (bad_row != nullptr) cudaMemsetAsync(bad_row, 0x7f, sizeof(int64_t), stream);
}

template <class T>
void Zero(T* p, int64_t n, cudaStream_t stream) {
  if (n > 0) cudaMemsetAsync(p, 0, static_cast<size_t>(n) * sizeof(T), stream);  // +0.0
}

}  // namespace

template <class T>
void Softmax(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows > 0 && cols > 0)
    SoftmaxKernel<T><<<RowBlocks(rows), kThreads, 0, stream>>>(x, y, rows, cols);
}

template <class T>
void SoftmaxGrad(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (dy == nullptr) {
    Zero(dx, rows * cols, stream);
  } else if (rows > 0 && cols > 0) {
    SoftmaxGradKernel<T><<<RowBlocks(rows), kThreads, 0, stream>>>(y, dy, dx, rows, cols);
  }
}

template <class T>
void SoftmaxWithCrossEntropy(const T* logits, const T* soft_label, const int64_t* hard_label,
                             T* softmax, T* loss, int64_t rows, int64_t cols, int64_t* bad_row,
                             cudaStream_t stream) {
  ResetBadRow(bad_row, stream);
  if (rows > 0) {
    SoftmaxWithCrossEntropyKernel<T><<<RowBlocks(rows), kThreads, 0, stream>>>(
        logits, soft_label, hard_label, softmax, loss, rows, cols, bad_row);
  }
}

template <class T>
void SoftmaxWithCrossEntropyGrad(const T* softmax, const T* soft_label, const int64_t* hard_label,
                                 const T* dloss, T* dlogits, int64_t rows, int64_t cols,
                                 int64_t* bad_row, cudaStream_t stream) {
  ResetBadRow(bad_row, stream);
  const int64_t n = rows * cols;
  if (dloss == nullptr) {
    Zero(dlogits, n, stream);
  } else if (soft_label != nullptr) {
    if (rows > 0 && cols > 0) {
      SoftLabelGradKernel<T><<<RowBlocks(rows), kThreads, 0, stream>>>(softmax, soft_label, dloss,
                                                                       dlogits, rows, cols);
    }
  } else if (rows > 0) {
    if (cols == 0) {
      // Every label is out of range; there is no element to visit.
      HardCrossEntropyGradKernel<T><<<Blocks(rows), kThreads, 0, stream>>>(
          softmax, hard_label, dloss, dlogits, rows, cols, bad_row);
    } else {
      HardLabelGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(softmax, hard_label, dloss,
                                                                 dlogits, n, cols, bad_row);
    }
  }
}

template <class T>
void CrossEntropy(const T* x, const T* soft_label, const int64_t* hard_label, T* y, int64_t rows,
                  int64_t cols, int64_t* bad_row, cudaStream_t stream) {
  ResetBadRow(bad_row, stream);
  if (rows <= 0) return;
  if (soft_label != nullptr) {
    SoftCrossEntropyKernel<T>
        <<<RowBlocks(rows), kThreads, 0, stream>>>(x, soft_label, y, rows, cols);
  } else {
    HardCrossEntropyKernel<T>
        <<<Blocks(rows), kThreads, 0, stream>>>(x, hard_label, y, rows, cols, bad_row);
  }
}

template <class T>
void CrossEntropyGrad(const T* x, const T* soft_label, const int64_t* hard_label, const T* dy,
                      T* dx, int64_t rows, int64_t cols, int64_t* bad_row, cudaStream_t stream) {
  ResetBadRow(bad_row, stream);
  const int64_t n = rows * cols;
  if (soft_label != nullptr) {
    if (dy == nullptr) {
      Zero(dx, n, stream);
    } else if (n > 0) {
      SoftCrossEntropyGradKernel<T>
          <<<Blocks(n), kThreads, 0, stream>>>(x, soft_label, dy, dx, n, cols);
    }
    return;
  }
  Zero(dx, n, stream);
  if (dy != nullptr && rows > 0) {
    HardCrossEntropyGradKernel<T>
        <<<Blocks(rows), kThreads, 0, stream>>>(x, hard_label, dy, dx, rows, cols, bad_row);
  }
}

void Accuracy(const int64_t* indices, const int64_t* label, int64_t rows, int64_t k,
              float* accuracy, int64_t* correct, int64_t* total, cudaStream_t stream) {
  AccuracyKernel<<<1, kThreads, 0, stream>>>(indices, label, rows, k, accuracy, correct, total);
}

template void Softmax<float>(const float*, float*, int64_t, int64_t, cudaStream_t);
template void Softmax<double>(const double*, double*, int64_t, int64_t, cudaStream_t);
template void SoftmaxGrad<float>(const float*, const float*, float*, int64_t, int64_t,
                                 cudaStream_t);
template void SoftmaxGrad<double>(const double*, const double*, double*, int64_t, int64_t,
                                  cudaStream_t);
template void SoftmaxWithCrossEntropy<float>(const float*, const float*, const int64_t*, float*,
                                             float*, int64_t, int64_t, int64_t*, cudaStream_t);
template void SoftmaxWithCrossEntropy<double>(const double*, const double*, const int64_t*, double*,
                                              double*, int64_t, int64_t, int64_t*, cudaStream_t);
template void SoftmaxWithCrossEntropyGrad<float>(const float*, const float*, const int64_t*,
                                                 const float*, float*, int64_t, int64_t, int64_t*,
                                                 cudaStream_t);
template void SoftmaxWithCrossEntropyGrad<double>(const double*, const double*, const int64_t*,
                                                  const double*, double*, int64_t, int64_t,
                                                  int64_t*, cudaStream_t);
template void CrossEntropy<float>(const float*, const float*, const int64_t*, float*, int64_t,
                                  int64_t, int64_t*, cudaStream_t);
template void CrossEntropy<double>(const double*, const double*, const int64_t*, double*, int64_t,
                                   int64_t, int64_t*, cudaStream_t);
template void CrossEntropyGrad<float>(const float*, const float*, const int64_t*, const float*,
                                      float*, int64_t, int64_t, int64_t*, cudaStream_t);
template void CrossEntropyGrad<double>(const double*, const double*, const int64_t*, const double*,
                                       double*, int64_t, int64_t, int64_t*, cudaStream_t);

}  // namespace rill::cuda
