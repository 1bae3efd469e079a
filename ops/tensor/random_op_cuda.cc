// CUDA kernels of uniform_random and gaussian_random. The values are drawn on
// the host, from the op's own generator (ctx.rng(): an mt19937_64 seeded by
// the executor from the op's `seed` attribute, or from the program's
// random_seed when it is 0, the same way on every place, and advancing from
// run to run), by the CPU kernels' own code (random_fill.h) into a host
// tensor, then copied to the op's device. So cuda:0 gets bit for bit the
// numbers the CPU would: a model initialised on the GPU starts from the CPU's
// parameters. The copy is queued on the stream the executor is launching on
// (CudaStream::Current()) and waited for before the host tensor is freed.
#include "ops/tensor/random_fill.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// Out on the op's device: a copy of `host`, queued on the current stream and
// waited for, so `host` may be freed on return.
void CopyToOut(KernelContext& ctx, const Tensor& host, const char* op) {
  Tensor* out = ctx.Output("Out");
  out->Allocate(host.dtype(), host.shape(), ctx.place());
  if (host.numel() == 0) return;
  const cudaStream_t stream = CudaStream::Current();
  CheckCuda(cudaMemcpyAsync(out->raw_data(), host.raw_data(), out->bytes(), cudaMemcpyHostToDevice,
                            stream),
            StrCat(op, ": copy to the device"));
  CheckCuda(cudaStreamSynchronize(stream), StrCat(op, ": copy to the device"));
}

void UniformRandomCudaKernel(KernelContext& ctx) {
  Tensor host;
  FillUniformRandom(ctx, &host);
  CopyToOut(ctx, host, "uniform_random");
}

void GaussianRandomCudaKernel(KernelContext& ctx) {
  Tensor host;
  FillGaussianRandom(ctx, &host);
  CopyToOut(ctx, host, "gaussian_random");
}

}  // namespace

RILL_REGISTER_KERNEL(uniform_random, Cuda, UniformRandomCudaKernel);
RILL_REGISTER_KERNEL(gaussian_random, Cuda, GaussianRandomCudaKernel);

}  // namespace rill
