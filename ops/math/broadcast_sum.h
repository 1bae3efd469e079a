// The order in which a binary elementwise gradient sums Y@GRAD over the
// dims Y was broadcast along, shared by the CPU kernels (elementwise.h) and
// the CUDA ones (binary_cuda.cu) so that both give the same bits.
//
// With X viewed as [pre, n, post], dy[j] adds terms t(i, k). Each row i is cut
// into chunks of kBroadcastSumChunk consecutive k; a chunk's terms are summed
// into a partial as lane_sum.h's LaneSum does (kSumLanes lanes over the
// chunk's whole groups of kSumLanes, the rest added one by one from 0, then
// the lanes in order), and dy[j] = 0 + the partials added one by one in
// (i, chunk) order. With post == 1 a partial is its one term, so this is the
// plain sequential sum over i. The chunks let a GPU sum a row's chunks in
// parallel while every partial keeps a fixed order (a chain of pre * post
// dependent additions per element of Y took 13 ms for a convolution's bias at
// batch 256 on an H100); the lanes let a CPU vectorise a chunk (one serial
// chain of additions took 1.6 ms per step for the CNN's first bias, 64 x 784
// terms for each of 32 channels, at batch 64).
#pragma once

#include <cstdint>

namespace rill {

inline constexpr int64_t kBroadcastSumChunk = 1024;

}  // namespace rill
