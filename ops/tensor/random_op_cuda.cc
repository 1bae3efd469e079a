// CUDA kernels of uniform_random and gaussian_random. The values are drawn on
// the host, from the op's own generator (ctx.rng(): an mt19937_64 seeded by
// the executor from the op's `seed` attribute, or from the program's
// random_seed when it is 0, the same way on every place, and advancing from
// run to run), with exactly the CPU kernels' draws in the CPU kernels' order
// (uniform_random_op.cc, gaussian_random_op.cc), then copied to the op's
// device. So cuda:0 gets bit for bit the numbers the CPU would: a model
// initialised on the GPU starts from the CPU's parameters. The copy is queued
// on the stream the executor is launching on (CudaStream::Current()) and
// waited for before the host buffer is freed.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// uniform_random_op.cc's loop: one draw per element, its top 53 bits scaled
// to [0, 1), then to [lo, hi), kept below hi after rounding to T.
template <class T>
void DrawUniform(std::mt19937_64& rng, double lo, double hi, T* o, int64_t n) {
  const T top = static_cast<T>(hi);
  const T below_top = std::nextafter(top, static_cast<T>(lo));
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    T v = static_cast<T>(lo + (hi - lo) * u);
    if (v >= top && lo < hi) v = below_top;
    o[i] = v;
  }
}

// gaussian_random_op.cc's loop: Box-Muller, two draws (u1 in (0, 1], u2 in
// [0, 1)) per pair of elements, the second of the pair dropped at an odd end.
template <class T>
void DrawGaussian(std::mt19937_64& rng, double mean, double stddev, T* o, int64_t n) {
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;
    const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    o[i] = static_cast<T>(mean + stddev * r * std::cos(angle));
    if (i + 1 < n) o[i + 1] = static_cast<T>(mean + stddev * r * std::sin(angle));
  }
}

// Out allocated on the op's device and filled by `draw(host, n)` through a
// host buffer: copied on the current stream and waited for before the buffer
// is freed.
template <class T, class Draw>
void FillFromHost(KernelContext& ctx, Tensor* out, const Shape& shape, const char* op, Draw draw) {
  out->Allocate(DataTypeOf<T>(), shape, ctx.place());
  const int64_t n = out->numel();
  std::vector<T> host(static_cast<size_t>(n));
  draw(host.data(), n);
  if (n == 0) return;
  const cudaStream_t stream = CudaStream::Current();
  CheckCuda(cudaMemcpyAsync(out->mutable_data<T>(), host.data(), out->bytes(),
                            cudaMemcpyHostToDevice, stream),
            StrCat(op, ": copy to the device"));
  CheckCuda(cudaStreamSynchronize(stream), StrCat(op, ": copy to the device"));
}

void UniformRandomCudaKernel(KernelContext& ctx) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  const double lo = ctx.Attr<float>("min");
  const double hi = ctx.Attr<float>("max");
  RILL_CHECK(lo <= hi, kInvalidArgument, "min (", lo, ") must not exceed max (", hi, ")");
  Tensor* out = ctx.Output("Out");
  std::mt19937_64& rng = ctx.rng();
  VisitFloatType(dtype, [&]<class T>() {
    FillFromHost<T>(ctx, out, shape, "uniform_random",
                    [&](T* o, int64_t n) { DrawUniform(rng, lo, hi, o, n); });
  });
}

void GaussianRandomCudaKernel(KernelContext& ctx) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  const double mean = ctx.Attr<float>("mean");
  const double stddev = ctx.Attr<float>("std");
  RILL_CHECK(stddev >= 0, kInvalidArgument, "std must be >= 0, is ", stddev);
  Tensor* out = ctx.Output("Out");
  std::mt19937_64& rng = ctx.rng();
  VisitFloatType(dtype, [&]<class T>() {
    FillFromHost<T>(ctx, out, shape, "gaussian_random",
                    [&](T* o, int64_t n) { DrawGaussian(rng, mean, stddev, o, n); });
  });
}

}  // namespace

RILL_REGISTER_KERNEL(uniform_random, Cuda, UniformRandomCudaKernel);
RILL_REGISTER_KERNEL(gaussian_random, Cuda, GaussianRandomCudaKernel);

}  // namespace rill
