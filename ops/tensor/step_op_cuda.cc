// CUDA kernels of read_step, write_step (and their gradients), increment,
// fill_constant_batch_size_like and sequence_mask (step_kernels.h): the
// steps' rows move with cudaMemcpy2DAsync / cudaMemset2DAsync on the stream
// the executor is launching on; the others compute their small result on the
// host and copy it to the device.
#include "ops/tensor/step_kernels.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// A device's rows (CopyRowsFn); pitches of one-row copies may be anything.
void CopyDeviceRows(char* dst, size_t dst_pitch, const char* src, size_t src_pitch, size_t row,
                    int64_t rows) {
  if (row == 0 || rows == 0) return;
  const cudaStream_t stream = CudaStream::Current();
  if (rows == 1) dst_pitch = src_pitch = row;
  if (src == nullptr) {
    CheckCuda(cudaMemset2DAsync(dst, dst_pitch, 0, row, static_cast<size_t>(rows), stream),
              "step rows: cudaMemset2DAsync");
  } else {
    CheckCuda(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row, static_cast<size_t>(rows),
                                cudaMemcpyDeviceToDevice, stream),
              "step rows: cudaMemcpy2DAsync");
  }
}

void ReadStepCudaKernel(KernelContext& ctx) { ReadStepOn(ctx, CopyDeviceRows); }
void ReadStepGradCudaKernel(KernelContext& ctx) { ReadStepGradOn(ctx, CopyDeviceRows); }
void WriteStepCudaKernel(KernelContext& ctx) { WriteStepOn(ctx, CopyDeviceRows); }
void WriteStepGradCudaKernel(KernelContext& ctx) { WriteStepGradOn(ctx, CopyDeviceRows); }

}  // namespace

RILL_REGISTER_KERNEL(read_step, Cuda, ReadStepCudaKernel);
RILL_REGISTER_KERNEL(read_step_grad, Cuda, ReadStepGradCudaKernel);
RILL_REGISTER_KERNEL(write_step, Cuda, WriteStepCudaKernel);
RILL_REGISTER_KERNEL(write_step_grad, Cuda, WriteStepGradCudaKernel);
RILL_REGISTER_KERNEL(increment, Cuda, IncrementKernel);
RILL_REGISTER_KERNEL(fill_constant_batch_size_like, Cuda, FillConstantBatchSizeLikeKernel);
RILL_REGISTER_KERNEL(sequence_mask, Cuda, SequenceMaskKernel);

}  // namespace rill
