// Device code of squared_l2_norm, squared_l2_norm_grad and less_than
// (norm_compare_cuda.h).
#include "ops/cuda_device_math.cuh"
#include "ops/math/norm_compare_cuda.h"

namespace rill::cuda {
namespace {

// Squares per tile of squared_l2_norm: two tiles of doubles take 32 KiB of
// shared memory, within the 48 KiB a block has without opting in.
constexpr int kNormTile = 2048;

// dst[j] = x[base + j]^2 for this thread's j of tile `tile` (first, then
// every step-th element), base = tile * kNormTile.
template <class T>
__device__ void SquareTile(const T* x, int64_t n, int64_t tile, T* dst, int first, int step) {
  const int64_t base = tile * kNormTile;
  const int count = static_cast<int>(n - base < kNormTile ? n - base : kNormTile);
  for (int j = first; j < count; j += step) dst[j] = Mul(x[base + j], x[base + j]);
}

// One block. The sum is the CPU's sequential one, so thread 0 adds every
// square in order; the other warps square the next tile into the other half
// of a double buffer meanwhile, so that thread 0 reads only shared memory.
// Invariant: in round t thread 0 reads squares[t % 2] and the others write
// squares[(t + 1) % 2]; the barrier ending the round hands both over.
template <class T>
__global__ void SquaredL2NormKernel(const T* x, T* out, int64_t n) {
  __shared__ T squares[2][kNormTile];
  const int64_t tiles = (n + kNormTile - 1) / kNormTile;
  if (tiles > 0) SquareTile(x, n, 0, squares[0], threadIdx.x, blockDim.x);
  __syncthreads();
  T sum = T(0);  // thread 0's
  for (int64_t t = 0; t < tiles; ++t) {
    if (threadIdx.x >= 32) {
      if (t + 1 < tiles) {
        SquareTile(x, n, t + 1, squares[(t + 1) % 2], threadIdx.x - 32, blockDim.x - 32);
      }
    } else if (threadIdx.x == 0) {
      const int64_t left = n - t * kNormTile;
      const int count = static_cast<int>(left < kNormTile ? left : kNormTile);
      const T* s = squares[t % 2];
#pragma unroll 8
      for (int j = 0; j < count; ++j) sum = Add(sum, s[j]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = sum;
}

template <class T>
__global__ void SquaredL2NormGradKernel(const T* x, const T* dout, T* dx, int64_t n) {
  const T twice_dout = Mul(T(2), dout != nullptr ? dout[0] : T(0));
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = Mul(twice_dout, x[i]);
  }
}

template <class T>
__global__ void LessThanKernel(const T* x, const T* y, bool broadcast_y, int32_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const double right = static_cast<double>(y[broadcast_y ? 0 : i]);
    out[i] = static_cast<double>(x[i]) < right ? 1 : 0;
  }
}

}  // namespace

template <class T>
void SquaredL2Norm(const T* x, T* out, int64_t n, cudaStream_t stream) {
  SquaredL2NormKernel<T><<<1, kThreads, 0, stream>>>(x, out, n);
}

template <class T>
void SquaredL2NormGrad(const T* x, const T* dout, T* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) SquaredL2NormGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, dout, dx, n);
}

template <class T>
void LessThan(const T* x, const T* y, bool broadcast_y, int32_t* out, int64_t n,
              cudaStream_t stream) {
  if (n > 0) LessThanKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, broadcast_y, out, n);
}

template void SquaredL2Norm<float>(const float*, float*, int64_t, cudaStream_t);
template void SquaredL2Norm<double>(const double*, double*, int64_t, cudaStream_t);
template void SquaredL2NormGrad<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void SquaredL2NormGrad<double>(const double*, const double*, double*, int64_t,
                                        cudaStream_t);
template void LessThan<float>(const float*, const float*, bool, int32_t*, int64_t, cudaStream_t);
template void LessThan<double>(const double*, const double*, bool, int32_t*, int64_t, cudaStream_t);
template void LessThan<int32_t>(const int32_t*, const int32_t*, bool, int32_t*, int64_t,
                                cudaStream_t);
template void LessThan<int64_t>(const int64_t*, const int64_t*, bool, int32_t*, int64_t,
                                cudaStream_t);

}  // namespace rill::cuda
