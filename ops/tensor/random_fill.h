// The values of uniform_random and gaussian_random, drawn in host memory from
// the op's generator (ctx.rng()): one code for the CPU kernels and the CUDA
// ones (random_op_cuda.cc, which copies them to the device), so every place
// draws the same numbers in the same order, bit for bit.
#pragma once

#include "rill/kernel_context.h"

namespace rill {

// Allocates `out` in host memory with the op's `shape` and `dtype` (float32
// or float64) and fills it: uniform_random's values in [min, max), one draw
// per element; throws kInvalidArgument when min exceeds max.
void FillUniformRandom(KernelContext& ctx, Tensor* out);

// The same for gaussian_random: normal values N(mean, std^2) by Box-Muller,
// two draws per pair of elements; throws kInvalidArgument when std < 0.
void FillGaussianRandom(KernelContext& ctx, Tensor* out);

}  // namespace rill
