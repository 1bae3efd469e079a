// What dropout's CPU kernels (dropout_op.cc) and CUDA kernels
// (embedding_dropout_op_cuda.cc) share: their inputs, attributes and outputs
// read and checked alike, and the training mask drawn on the host from the
// op's generator (one code, so every place drops the same elements, bit for
// bit).
#pragma once

#include <cstdint>
#include <random>

#include "rill/kernel_context.h"

namespace rill {

// dropout's input, attributes and outputs.
struct DropoutArgs {
  const Tensor& x;
  float p;  // dropout_prob
  bool is_test;
  bool upscale;  // upscale_in_train; false: downgrade_in_infer
  Tensor* out;
  Tensor* mask;  // null when Mask is not bound (allowed at test time only)
};
// Reads them; throws kInvalidArgument in training without the Mask output.
DropoutArgs ReadDropoutArgs(KernelContext& ctx);

// What X and Mask are multiplied by at test time: 1 (upscale_in_train) or 1 - p.
template <class T>
T DropoutTestScale(float p, bool upscale) {
  return upscale ? T(1) : static_cast<T>(1.0 - static_cast<double>(p));
}

// The training mask of n elements, into host memory m: 0 for a dropped
// element, else 1/(1-p) (upscale) or 1. One number from `generator` (taken
// even when n is 0) starts a SplitMix64 stream, each of whose numbers gives
// three 21-bit draws, one per element. T is float or double.
template <class T>
void DrawDropoutMask(std::mt19937_64& generator, float p, bool upscale, T* m, int64_t n);

// dropout_grad's inputs and output.
struct DropoutGradArgs {
  const Tensor& mask;
  const Tensor* dy;  // Out@GRAD, null when absent (zero)
  Tensor* dx;        // X@GRAD
};
// Reads them. Throws VisitFloatType's kUnimplemented error unless Mask is
// float32 or float64, then kInvalidArgument unless Out@GRAD, when present,
// has Mask's shape.
DropoutGradArgs ReadDropoutGradArgs(KernelContext& ctx);

}  // namespace rill
