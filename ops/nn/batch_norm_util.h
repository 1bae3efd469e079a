// What batch_norm's and batch_norm_grad's kernels read and check: one copy
// for the CPU kernels (batch_norm_op.cc) and the CUDA kernels' host glue
// (batch_norm_op_cuda.cc), so both accept the same inputs and fail with the
// same messages. Stateless.
#pragma once

#include <cstdint>
#include <string>

#include "rill/kernel_context.h"
#include "rill/shape.h"

namespace rill {

// X seen as [n, c, hw]: [N, C] (hw 1) or NCHW [N, C, H, W] (hw H * W).
struct BatchNormDims {
  int64_t n = 0;
  int64_t c = 0;
  int64_t hw = 1;
  // Elements each channel's statistics are taken over.
  int64_t per_channel() const { return n * hw; }
};

// Throws kInvalidArgument, naming `op` and the variable, unless `x` has rank
// 2 or 4 (dims of -1, at shape inference, pass).
BatchNormDims BatchNormDimsOf(const char* op, const std::string& x_name, const Shape& x);

// batch_norm's inputs and attributes, checked: Scale, Bias, Mean and Variance
// are [C] of X's type.
struct BatchNormForward {
  const Tensor* x = nullptr;
  const Tensor* scale = nullptr;
  const Tensor* bias = nullptr;
  const Tensor* mean = nullptr;
  const Tensor* variance = nullptr;
  BatchNormDims dims;
  float momentum = 0.9f;
  float epsilon = 1e-5f;
  bool is_test = false;
};
// `op` names the op in errors.
BatchNormForward CheckBatchNormKernel(const KernelContext& ctx, const char* op = "batch_norm");

// batch_norm_grad's inputs, checked: Scale, SavedMean and SavedVariance (the
// inverse standard deviation) are [C] of X's type, Y@GRAD (null when absent:
// zero) has X's shape and type.
struct BatchNormBackward {
  const Tensor* x = nullptr;
  const Tensor* scale = nullptr;
  const Tensor* saved_mean = nullptr;
  const Tensor* saved_inv_std = nullptr;
  const Tensor* dy = nullptr;
  BatchNormDims dims;
  bool is_test = false;
};
BatchNormBackward CheckBatchNormGradKernel(const KernelContext& ctx,
                                           const char* op = "batch_norm_grad");

}  // namespace rill
