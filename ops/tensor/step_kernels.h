// Kernels of read_step and write_step (step_ops.cc) on any place: they only
// move rows of bytes, through `copy`, the place's way (host memory:
// step_ops.cc; a CUDA device: step_op_cuda.cc). Also the kernels that compute
// a small result on the host whatever the op's place, then put it there:
// increment, fill_constant_batch_size_like, sequence_mask (their CPU and CUDA
// registrations are the same function).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rill/kernel_context.h"

namespace rill {

// `rows` rows of `row` bytes: dst + r * dst_pitch gets src + r * src_pitch,
// or zeros where src is null.
using CopyRowsFn = void (*)(char* dst, size_t dst_pitch, const char* src, size_t src_pitch,
                            size_t row, int64_t rows);

void ReadStepOn(KernelContext& ctx, CopyRowsFn copy);
void ReadStepGradOn(KernelContext& ctx, CopyRowsFn copy);
void WriteStepOn(KernelContext& ctx, CopyRowsFn copy);
void WriteStepGradOn(KernelContext& ctx, CopyRowsFn copy);

void IncrementKernel(KernelContext& ctx);
void FillConstantBatchSizeLikeKernel(KernelContext& ctx);
void SequenceMaskKernel(KernelContext& ctx);

// `host` (a tensor in host memory) as Out-like output `out` on `place`.
void PutOnPlace(Tensor host, Tensor* out, Place place);

}  // namespace rill
