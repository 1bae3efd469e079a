// CUDA kernels of the fused recurrent ops (lstm, gru and their gradients) as
// plain launchers: this header is included by rnn_cuda.cu (nvcc, C++17) and
// by the glue in rnn_op_cuda.cc (C++20). Layout as rnn_util.h says: row
// n * steps + t of an [N*T, ...] buffer is sequence n's step t; `lengths`
// (device, int64 [N]) are each sequence's steps. Every step launcher covers
// one step t of every sequence, in the CPU kernels' arithmetic.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// out[r, :] = bias for each of `rows` rows of `width`.
template <class T>
void BiasRows(const T* bias, T* out, int64_t rows, int64_t width, cudaStream_t stream);

// LSTM step t: the gates' pre-activations (gates row + recurrent) become the
// activated gates; c, h ([N, H]) advance; Out and Cells get the step's h
// and c. Past a sequence's length: gates and Out zero, Cells the kept c.
template <class T>
void LstmForwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden,
                     int64_t t, const T* recurrent, T* gates, T* out, T* cells, T* h, T* c,
                     cudaStream_t stream);

// LSTM step t backwards (lstm_op.cc's LstmCellBackward): from dh (plus
// Out@GRAD's row, when d_out is not null) and dc, the pre-activation
// gradients into d_pre's row and `step` ([N, 4H]); dc becomes c_{t-1}'s.
// Past a sequence's length both rows are zero and dh, dc pass unchanged.
template <class T>
void LstmBackwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden,
                      int64_t t, const T* gates, const T* cells, const T* d_out, T* dh, T* dc,
                      T* d_pre, T* step, cudaStream_t stream);

// GRU step t (gru_op.cc's GruCellForward): gates r, z, n activated in place,
// HiddenProduct's row gets hn, h advances, Out gets it. Past a sequence's
// length: gates, Out and HiddenProduct zero.
template <class T>
void GruForwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden, int64_t t,
                    const T* recurrent, T* gates, T* out, T* product, T* h, cudaStream_t stream);

// GRU step t backwards (GruCellBackward): the input-side and recurrent-side
// pre-activation gradients into their rows of d_input and d_hidden and into
// `step` (the recurrent side, [N, 3H]); dh becomes dh * z.
template <class T>
void GruBackwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden,
                     int64_t t, const T* gates, const T* product, const T* out, const T* d_out,
                     T* dh, T* d_input, T* d_hidden, T* step, cudaStream_t stream);

// For the sequences that ran step t: dh = back (add false: LSTM) or
// dh += back (add true: GRU), [N, H].
template <class T>
void TakeRecurrentGradient(const int64_t* lengths, int64_t batch, int64_t hidden, int64_t t,
                           const T* back, T* dh, bool add, cudaStream_t stream);

// before[n, t] = out[n, t - 1], zero at t = 0 ([N, T, H]).
template <class T>
void StatesBefore(const T* out, T* before, int64_t batch, int64_t steps, int64_t hidden,
                  cudaStream_t stream);

// sums[j] = the sum of m[r, j] over r in order (as the CPU adds them).
template <class T>
void ColumnSums(const T* m, T* sums, int64_t rows, int64_t width, cudaStream_t stream);

}  // namespace rill::cuda
