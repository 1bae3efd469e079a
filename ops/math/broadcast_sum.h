// The order in which a binary elementwise gradient sums Y@GRAD over the
// dims Y was broadcast along, shared by the CPU kernels (elementwise.h) and
// the CUDA ones (binary_cuda.cu) so that both give the same bits.
//
// With X viewed as [pre, n, post], dy[j] adds terms t(i, k). Each row i is cut
// into chunks of kBroadcastSumChunk consecutive k; a chunk's terms are added
// one by one from 0 into a partial, and dy[j] = 0 + the partials added one
// by one in (i, chunk) order. With post == 1 a partial is its one term, so
// this is the plain sequential sum over i. The chunks let a GPU sum a row's
// chunks in parallel while every partial keeps a fixed, sequential order
// (a chain of pre * post dependent additions per element of Y took 13 ms
// for a convolution's bias at batch 256 on an H100).
#pragma once

#include <cstdint>

namespace rill {

inline constexpr int64_t kBroadcastSumChunk = 1024;

}  // namespace rill
