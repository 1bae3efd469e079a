// Device code of top_k and top_k_grad (top_k_cuda.h). Grid-stride loops: one
// launch covers any size with a bounded grid.
#include <cub/device/device_segmented_sort.cuh>

#include "ops/cuda_device_math.cuh"
#include "ops/tensor/top_k_cuda.h"

namespace rill::cuda {
namespace {

// top_k_op.cc's TopKRow for small k, on one row: each value either is
// dropped (not above the last of a full list) or moves up past the values
// it is greater than, so equal values keep their order.
template <class T>
__global__ void TopKInsertionKernel(const T* x, int64_t rows, int64_t cols, int k, T* values,
                                    int64_t* indices) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x) {
    const T* row = x + r * cols;
    T top[kTopKInsertionMaxK];
    int64_t at[kTopKInsertionMaxK];
    int count = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const T v = row[j];
      if (count == k && !(v > top[k - 1])) continue;
      int pos = count < k ? count++ : k - 1;
      while (pos > 0 && v > top[pos - 1]) {
        top[pos] = top[pos - 1];
        at[pos] = at[pos - 1];
        --pos;
      }
      top[pos] = v;
      at[pos] = j;
    }
    for (int j = 0; j < k; ++j) {
      values[r * k + j] = top[j];
      indices[r * k + j] = at[j];
    }
  }
}

// A key whose ascending order is the values' descending order, -0 and +0 alike.
__device__ __forceinline__ uint64_t DescendingKey(float v) {
  const uint32_t bits = v == 0.0f ? 0u : __float_as_uint(v);
  const uint32_t ascending = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return ~ascending;
}
__device__ __forceinline__ uint64_t DescendingKey(double v) {
  const uint64_t bits = v == 0.0 ? 0u : static_cast<uint64_t>(__double_as_longlong(v));
  const uint64_t ascending = (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
  return ~ascending;
}
__device__ __forceinline__ uint64_t DescendingKey(int32_t v) {
  return static_cast<uint32_t>(~(static_cast<uint32_t>(v) ^ 0x80000000u));
}
__device__ __forceinline__ uint64_t DescendingKey(int64_t v) {
  return ~(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
}

// What the sort of TopKBySort works in, carved from its scratch.
struct SortScratch {
  uint64_t* keys_in;
  uint64_t* keys_out;
  int64_t* columns_in;
  int64_t* columns_out;
  int64_t* row_starts;  // rows + 1: row r is [row_starts[r], row_starts[r + 1])
  void* sort_temp;
  size_t sort_temp_bytes;
};

constexpr size_t kScratchAlignment = 256;

size_t AlignUp(size_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

// The sort's own temporary bytes for rows of cols (a query: nothing runs;
// the argument types are those of the sort in TopKBySort).
cudaError_t SortTempBytes(int64_t rows, int64_t cols, size_t* bytes) {
  return cub::DeviceSegmentedSort::StableSortPairs(
      nullptr, *bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), rows * cols, rows,
      static_cast<const int64_t*>(nullptr), static_cast<const int64_t*>(nullptr));
}

// The arrays' places in `base` (at least TopKSortScratchBytes long); their
// total length (with the slack for aligning base) when base is null.
size_t CarveScratch(void* base, int64_t rows, int64_t cols, size_t sort_temp_bytes,
                    SortScratch* s) {
  const size_t items = AlignUp(static_cast<size_t>(rows * cols) * sizeof(uint64_t));
  const size_t starts = AlignUp(static_cast<size_t>(rows + 1) * sizeof(int64_t));
  const size_t total = 4 * items + starts + sort_temp_bytes + kScratchAlignment;
  if (base == nullptr) return total;
  char* p = reinterpret_cast<char*>(AlignUp(reinterpret_cast<uintptr_t>(base)));
  s->keys_in = reinterpret_cast<uint64_t*>(p);
  s->keys_out = reinterpret_cast<uint64_t*>(p + items);
  s->columns_in = reinterpret_cast<int64_t*>(p + 2 * items);
  s->columns_out = reinterpret_cast<int64_t*>(p + 3 * items);
  s->row_starts = reinterpret_cast<int64_t*>(p + 4 * items);
  s->sort_temp = p + 4 * items + starts;
  s->sort_temp_bytes = sort_temp_bytes;
  return total;
}

template <class T>
__global__ void SortKeysKernel(const T* x, int64_t rows, int64_t cols, uint64_t* keys,
                               int64_t* columns, int64_t* row_starts) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n || i <= rows;
       i += int64_t{blockDim.x} * gridDim.x) {
    if (i < n) {
      keys[i] = DescendingKey(x[i]);
      columns[i] = i % cols;
    }
    if (i <= rows) row_starts[i] = i * cols;
  }
}

// The first k of each sorted row: their columns, and the values there.
template <class T>
__global__ void GatherTopKernel(const T* x, const int64_t* sorted_columns, int64_t rows,
                                int64_t cols, int64_t k, T* values, int64_t* indices) {
  const int64_t n = rows * k;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t r = i / k;
    const int64_t column = sorted_columns[r * cols + (i - r * k)];
    indices[i] = column;
    values[i] = x[r * cols + column];
  }
}

// One thread per row, adding in the CPU loop's order (repeated indices too).
template <class T>
__global__ void TopKGradKernel(const int64_t* indices, const T* dout, T* dx, int64_t rows,
                               int64_t cols, int64_t k, unsigned long long* bad_position) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = r * k + j;
      const int64_t column = indices[at];
      if (column < 0 || column >= cols) {
        atomicMin(bad_position, static_cast<unsigned long long>(at));
        break;
      }
      dx[r * cols + column] = Add(dx[r * cols + column], dout[at]);
    }
  }
}

}  // namespace

template <class T>
void TopKByInsertion(const T* x, int64_t rows, int64_t cols, int64_t k, T* values, int64_t* indices,
                     cudaStream_t stream) {
  if (rows == 0) return;
  TopKInsertionKernel<T>
      <<<Blocks(rows), kThreads, 0, stream>>>(x, rows, cols, static_cast<int>(k), values, indices);
}

cudaError_t TopKSortScratchBytes(int64_t rows, int64_t cols, size_t* bytes) {
  size_t sort_temp = 0;
  const cudaError_t status = SortTempBytes(rows, cols, &sort_temp);
  *bytes = CarveScratch(nullptr, rows, cols, sort_temp, nullptr);
  return status;
}

template <class T>
cudaError_t TopKBySort(const T* x, int64_t rows, int64_t cols, int64_t k, T* values,
                       int64_t* indices, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  size_t sort_temp = 0;
  cudaError_t status = SortTempBytes(rows, cols, &sort_temp);
  if (status != cudaSuccess) return status;
  SortScratch s;
  if (CarveScratch(scratch, rows, cols, sort_temp, &s) > scratch_bytes) {
    return cudaErrorInvalidValue;
  }
  const int64_t n = rows * cols;
  SortKeysKernel<T><<<Blocks(n > rows ? n : rows + 1), kThreads, 0, stream>>>(
      x, rows, cols, s.keys_in, s.columns_in, s.row_starts);
  status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  // Stable: equal keys keep their columns' order, earlier first.
  const uint64_t* keys = s.keys_in;
  const int64_t* columns = s.columns_in;
  const int64_t* row_starts = s.row_starts;
  status = cub::DeviceSegmentedSort::StableSortPairs(s.sort_temp, s.sort_temp_bytes, keys,
                                                     s.keys_out, columns, s.columns_out, n, rows,
                                                     row_starts, row_starts + 1, stream);
  if (status != cudaSuccess) return status;
  GatherTopKernel<T>
      <<<Blocks(rows * k), kThreads, 0, stream>>>(x, s.columns_out, rows, cols, k, values, indices);
  return cudaGetLastError();
}

template <class T>
void TopKGrad(const int64_t* indices, const T* dout, T* dx, int64_t rows, int64_t cols, int64_t k,
              int64_t* bad_position, cudaStream_t stream) {
  cudaMemsetAsync(bad_position, 0x7f, sizeof(int64_t), stream);
  if (rows == 0 || k == 0) return;
  TopKGradKernel<T><<<Blocks(rows), kThreads, 0, stream>>>(
      indices, dout, dx, rows, cols, k, reinterpret_cast<unsigned long long*>(bad_position));
}

#define RILL_TOP_K_INSTANTIATE(T)                                                              \
  template void TopKByInsertion<T>(const T*, int64_t, int64_t, int64_t, T*, int64_t*,          \
                                   cudaStream_t);                                              \
  template cudaError_t TopKBySort<T>(const T*, int64_t, int64_t, int64_t, T*, int64_t*, void*, \
                                     size_t, cudaStream_t);
RILL_TOP_K_INSTANTIATE(float)
RILL_TOP_K_INSTANTIATE(double)
RILL_TOP_K_INSTANTIATE(int32_t)
RILL_TOP_K_INSTANTIATE(int64_t)
#undef RILL_TOP_K_INSTANTIATE

template void TopKGrad<float>(const int64_t*, const float*, float*, int64_t, int64_t, int64_t,
                              int64_t*, cudaStream_t);
template void TopKGrad<double>(const int64_t*, const double*, double*, int64_t, int64_t, int64_t,
                               int64_t*, cudaStream_t);

}  // namespace rill::cuda
