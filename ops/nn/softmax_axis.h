// How softmax walks X along its `axis` and finds each element's Mask value:
// plain values shared by the CPU kernels (softmax_op.cc), the CUDA glue
// (softmax_op_cuda.cc) and the device code (softmax_axis_cuda.cu, C++17), so
// every place indexes alike. The host builds them (softmax_util.h).
#pragma once

#include <cstdint>

#ifndef RILL_HOST_DEVICE
#ifdef __CUDACC__
#define RILL_HOST_DEVICE __host__ __device__
#else
#define RILL_HOST_DEVICE
#endif
#endif

namespace rill {

// The most dims a masked X may have (the mask's index is kept in fixed arrays
// that are passed to the device by value).
inline constexpr int kSoftmaxMaxRank = 8;

// X seen as [outer, len, inner] around the axis: softmax row r (of
// outer * inner) holds the len elements Start(r) + j * inner.
struct SoftmaxRows {
  int64_t outer = 0;
  int64_t len = 0;
  int64_t inner = 1;

  RILL_HOST_DEVICE int64_t count() const { return outer * inner; }
  RILL_HOST_DEVICE int64_t Start(int64_t r) const { return (r / inner) * len * inner + r % inner; }
};

// Where X's element lies in Mask, which broadcasts to X: X's dims and, for
// each, Mask's stride along it (0 where Mask's dim is 1 or missing).
struct SoftmaxMaskIndex {
  int rank = 0;
  int64_t dims[kSoftmaxMaxRank] = {};
  int64_t strides[kSoftmaxMaxRank] = {};
  int64_t axis_stride = 0;  // Mask's stride along softmax's axis

  // Mask's offset for X's element at (row-major) index `x_index`.
  RILL_HOST_DEVICE int64_t Offset(int64_t x_index) const {
    int64_t at = 0;
    for (int d = rank - 1; d >= 0; --d) {
      at += (x_index % dims[d]) * strides[d];
      x_index /= dims[d];
    }
    return at;
  }
};

}  // namespace rill
