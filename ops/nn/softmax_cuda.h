// CUDA kernels of softmax, softmax_with_cross_entropy, cross_entropy (and
// their gradients) and accuracy, as plain launchers: this header is included
// by softmax_cuda.cu (nvcc, C++17) and by the glue in softmax_op_cuda.cc
// (C++20), so it holds only what both read alike.
//
// Rows are the last axis (cols classes each). Every sum the CPU kernels take
// over a row is taken here in the same order (one thread adds the terms left
// to right) with each operation rounded on its own (no FMA), so the results
// differ from the CPU's only where exp and log do (a few ulp).
//
// Hard labels: a label outside [0, cols) cannot throw on the device. The
// launchers that read hard labels take `bad_row`, a device int64 the launcher
// sets to kNoBadLabelRow and the kernels lower (atomicMin) to the smallest row
// whose label is out of range; the glue copies it back and throws the CPU
// kernels' error for that row.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rill::cuda {

// What `bad_row` holds when every label is in range (memset byte 0x7f).
inline constexpr int64_t kNoBadLabelRow = 0x7f7f7f7f7f7f7f7fLL;

// y = exp(x - max) / sum(exp(x - max)) per row of cols (softmax_op.cc).
template <class T>
void Softmax(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
// dx = (dy - sum(dy * y)) * y per row; dy null: zeros.
template <class T>
void SoftmaxGrad(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols, cudaStream_t stream);

// softmax_with_cross_entropy_op.cc: softmax of the logits and
// loss[r] = sum(label) * logsumexp - sum(label * logits) (soft_label non-null)
// or logsumexp - logits[label] (hard_label non-null, bad_row checked).
template <class T>
void SoftmaxWithCrossEntropy(const T* logits, const T* soft_label, const int64_t* hard_label,
                             T* softmax, T* loss, int64_t rows, int64_t cols, int64_t* bad_row,
                             cudaStream_t stream);
// dlogits = dloss * sum(label) * softmax - dloss * label (soft), or
// dloss * softmax less dloss at the label (hard); dloss null: zeros and no
// label check (as on the CPU).
template <class T>
void SoftmaxWithCrossEntropyGrad(const T* softmax, const T* soft_label, const int64_t* hard_label,
                                 const T* dloss, T* dlogits, int64_t rows, int64_t cols,
                                 int64_t* bad_row, cudaStream_t stream);

// cross_entropy_op.cc, probabilities clamped to at least T(1e-20):
// y[r] = -sum(label * log(x)) (soft) or -log(x[label]) (hard).
template <class T>
void CrossEntropy(const T* x, const T* soft_label, const int64_t* hard_label, T* y, int64_t rows,
                  int64_t cols, int64_t* bad_row, cudaStream_t stream);
// dx = (-dy * label) / x (soft), or -dy / x at the label and 0 elsewhere
// (hard); dy null: zeros and no label check (as on the CPU).
template <class T>
void CrossEntropyGrad(const T* x, const T* soft_label, const int64_t* hard_label, const T* dy,
                      T* dx, int64_t rows, int64_t cols, int64_t* bad_row, cudaStream_t stream);

// accuracy_op.cc: correct = rows whose label is among their k indices;
// accuracy = rows == 0 ? 0 : float(double(correct) / rows); all three outputs
// are device pointers (correct and total may be null).
void Accuracy(const int64_t* indices, const int64_t* label, int64_t rows, int64_t k,
              float* accuracy, int64_t* correct, int64_t* total, cudaStream_t stream);

}  // namespace rill::cuda
