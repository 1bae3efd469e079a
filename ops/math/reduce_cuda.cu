// Device code of mean, mean_grad and sum (reduce_cuda.h). Grid-stride loops:
// one launch covers any size with a bounded grid.
#include <vector>

#include "ops/cuda_device_math.cuh"
#include "ops/math/reduce_cuda.h"

namespace rill::cuda {
namespace {

// One thread: the CPU's sequential sum. Unrolled so that loads run ahead of
// the (necessarily serial) chain of additions.
template <class T>
__global__ void MeanKernel(const T* x, T* out, int64_t n, T n_as_t) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  T sum = T(0);
#pragma unroll 8
  for (int64_t i = 0; i < n; ++i) sum = Add(sum, x[i]);
  out[0] = Div(sum, n_as_t);
}

template <class T>
__global__ void MeanGradKernel(const T* dout, T* dx, int64_t n, T n_as_t) {
  const T d = dout != nullptr ? dout[0] : T(0);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = Div(d, n_as_t);
  }
}

constexpr int kMaxInputsPerLaunch = 8;

template <class T>
struct SumInputs {
  const T* p[kMaxInputsPerLaunch];
  int count;
};

// out[e] = start + in.p[0][e] + in.p[1][e] + ..., start being first[e] or,
// with first null, out[e]. An input that is out adds the running sum.
template <class T>
__global__ void SumKernel(const T* first, SumInputs<T> in, T* out, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{blockDim.x} * gridDim.x) {
    T acc = first != nullptr ? first[e] : out[e];
    for (int i = 0; i < in.count; ++i) {
      acc = Add(acc, in.p[i] == out ? acc : in.p[i][e]);
    }
    out[e] = acc;
  }
}

}  // namespace

template <class T>
void Mean(const T* x, T* out, int64_t n, T n_as_t, cudaStream_t stream) {
  MeanKernel<T><<<1, 1, 0, stream>>>(x, out, n, n_as_t);
}

template <class T>
void MeanGrad(const T* dout, T* dx, int64_t n, T n_as_t, cudaStream_t stream) {
  if (n > 0) MeanGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(dout, dx, n, n_as_t);
}

template <class T>
void Sum(const T* const* xs, int count, int in_place, T* out, int64_t n, cudaStream_t stream) {
  if (n <= 0 || count <= 0) return;
  // The inputs to add, in the CPU's order, after the starting value.
  const T* first = in_place < 0 ? xs[0] : nullptr;
  std::vector<const T*> rest;
  for (int i = 0; i < count; ++i) {
    if (i == in_place || (in_place < 0 && i == 0)) continue;
    rest.push_back(xs[i]);
  }
  size_t next = 0;
  do {  // at least one launch: the copy of xs[0] when nothing else is added
    SumInputs<T> in{};
    in.count = 0;
    while (next < rest.size() && in.count < kMaxInputsPerLaunch) in.p[in.count++] = rest[next++];
    SumKernel<T><<<Blocks(n), kThreads, 0, stream>>>(first, in, out, n);
    first = nullptr;  // later launches continue from out
  } while (next < rest.size());
}

template void Mean<float>(const float*, float*, int64_t, float, cudaStream_t);
template void Mean<double>(const double*, double*, int64_t, double, cudaStream_t);
template void MeanGrad<float>(const float*, float*, int64_t, float, cudaStream_t);
template void MeanGrad<double>(const double*, double*, int64_t, double, cudaStream_t);
template void Sum<float>(const float* const*, int, int, float*, int64_t, cudaStream_t);
template void Sum<double>(const double* const*, int, int, double*, int64_t, cudaStream_t);
template void Sum<int32_t>(const int32_t* const*, int, int, int32_t*, int64_t, cudaStream_t);
template void Sum<int64_t>(const int64_t* const*, int, int, int64_t*, int64_t, cudaStream_t);

}  // namespace rill::cuda
