// CUDA kernels of softmax along any axis with an optional mask, and of its
// gradient along any axis, as plain launchers: included by
// softmax_axis_cuda.cu (nvcc, C++17) and by the glue in softmax_op_cuda.cc
// (C++20). The glue calls softmax_cuda.h's row kernels for the last axis
// unmasked, these for the rest.
//
// As there, each row's sum is taken by one thread left to right with every
// operation rounded on its own, and the max is exact, so the results differ
// from the CPU's (softmax_op.cc) only where exp does (a few ulp); the
// gradient is bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/nn/softmax_axis.h"

namespace rill::cuda {

// y = softmax of x along rows' axis; mask (null: none) holds mask_index's
// values, 0 masking an element: it takes no part and gets 0, and a row
// masked everywhere is all zeros. y may be x.
template <class T>
void SoftmaxAxis(const T* x, T* y, SoftmaxRows rows, const T* mask, SoftmaxMaskIndex mask_index,
                 cudaStream_t stream);

// dx = (dy - sum(dy * y)) * y along rows' axis (dy not null).
template <class T>
void SoftmaxAxisGrad(const T* y, const T* dy, T* dx, SoftmaxRows rows, cudaStream_t stream);

}  // namespace rill::cuda
