// The optimizer ops' CUDA kernels (sgd, momentum, adam) for dense gradients:
// outputs allocated on the op's device, work launched on the stream the
// executor is launching on (CudaStream::Current()); device code in
// optimizer_cuda.cu. The one-element inputs (LearningRate, Beta1Pow,
// Beta2Pow) are device memory here: only their shapes and types are checked
// on the host, their values are read by the kernels. Outputs are usually their
// inputs (in place); the kernels also write separate outputs.
#include "ops/optimizer/optimizer_cuda.h"
#include "ops/optimizer/optimizer_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// A tensor CheckScalar (optimizer_util.h) accepted, its value left on the device.
cuda::DeviceScalar DeviceScalarOf(const Tensor& t) {
  return {t.raw_data(), t.dtype() == DataType::kFloat64};
}

void FailSparse(const char* op) {
  Fail(ErrorCode::kUnimplemented, op, " on cuda: selected-rows gradients not supported yet");
}

// `out` allocated on the op's device with the type and shape of `like` (which
// it usually is: then it keeps its buffer).
template <class T>
T* AllocateLike(Tensor* out, const Tensor& like, Place place) {
  const Shape shape = like.shape();
  out->Allocate(like.dtype(), shape, place);
  return out->mutable_data<T>();
}

void SgdCudaKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  const Tensor& learning_rate = ctx.Input("LearningRate");
  CheckScalar(learning_rate, "LearningRate");
  if (ctx.InputIsSelectedRows("Grad")) FailSparse("sgd");
  const SgdDense dense = ReadSgdDense(ctx, param);
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* g = dense.grad.data<T>();
    T* p = AllocateLike<T>(dense.param_out, param, ctx.place());
    RILL_CHECK(p != g, kInvalidArgument, "ParamOut may not share memory with Grad");
    cuda::Sgd(p_in, g, DeviceScalarOf(learning_rate), p, param.numel(), CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "sgd: kernel launch");
}

void MomentumCudaKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  if (ctx.InputIsSelectedRows("Grad")) FailSparse("momentum");
  const Tensor& grad = ctx.Input("Grad");
  const MomentumArgs args = ReadMomentumArgs(ctx, param, grad);
  const cuda::DeviceScalar lr = DeviceScalarOf(args.learning_rate);
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* v_in = args.velocity.data<T>();
    const T* g = grad.data<T>();
    T* p = AllocateLike<T>(args.param_out, param, ctx.place());
    T* v = AllocateLike<T>(args.velocity_out, param, ctx.place());
    RILL_CHECK(p != v && p != g && v != g, kInvalidArgument,
               "ParamOut, VelocityOut and Grad must not share memory");
    cuda::Momentum(p_in, v_in, g, lr, args.mu, args.nesterov, p, v, param.numel(),
                   CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "momentum: kernel launch");
}

// adam (decoupled_decay false) and adamw (true).
void RunAdamCudaKernel(KernelContext& ctx, bool decoupled_decay) {
  const char* op = decoupled_decay ? "adamw" : "adam";
  const Tensor& param = ctx.Input("Param");
  if (ctx.InputIsSelectedRows("Grad")) FailSparse(op);
  const Tensor& grad = ctx.Input("Grad");
  const AdamArgs args = ReadAdamArgs(ctx, decoupled_decay);
  const cuda::DeviceScalar lr = DeviceScalarOf(args.learning_rate);
  const cuda::DeviceScalar pow1 = DeviceScalarOf(args.beta1_pow);
  const cuda::DeviceScalar pow2 = DeviceScalarOf(args.beta2_pow);
  const DataType pow1_type = args.beta1_pow.dtype();
  const DataType pow2_type = args.beta2_pow.dtype();
  const Shape pow1_shape = args.beta1_pow.shape();
  const Shape pow2_shape = args.beta2_pow.shape();
  const cuda::AdamAttrs attrs{args.beta1, args.beta2, args.epsilon, args.weight_decay};
  // The CPU kernel's check that Beta1Pow and Beta2Pow are below 1 needs their
  // values, which are on the device: it is not made here.
  const AdamOutputs out = CheckAdamOperands(ctx, args, param, &grad);
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* m_in = args.moment1.data<T>();
    const T* v_in = args.moment2.data<T>();
    const T* g = grad.data<T>();
    T* p = AllocateLike<T>(out.param_out, param, ctx.place());
    T* m = AllocateLike<T>(out.moment1_out, param, ctx.place());
    T* v = AllocateLike<T>(out.moment2_out, param, ctx.place());
    RILL_CHECK(p != m && p != v && m != v && p != g && m != g && v != g, kInvalidArgument,
               "ParamOut, Moment1Out, Moment2Out and Grad must not share memory");
    cuda::Adam(p_in, m_in, v_in, g, lr, pow1, pow2, attrs, p, m, v, param.numel(),
               CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), StrCat(op, ": kernel launch"));
  // After the update, which reads Beta1Pow and Beta2Pow (usually these outputs).
  Tensor* pow1_out = ctx.Output("Beta1PowOut");
  Tensor* pow2_out = ctx.Output("Beta2PowOut");
  pow1_out->Allocate(pow1_type, pow1_shape, ctx.place());
  pow2_out->Allocate(pow2_type, pow2_shape, ctx.place());
  cuda::AdamAdvancePowers(pow1, pow2, attrs, pow1_out->raw_data(), pow2_out->raw_data(),
                          CudaStream::Current());
  CheckCuda(cudaGetLastError(), StrCat(op, ": kernel launch"));
}

void AdamCudaKernel(KernelContext& ctx) { RunAdamCudaKernel(ctx, false); }
void AdamWCudaKernel(KernelContext& ctx) { RunAdamCudaKernel(ctx, true); }

void WarmupCosineCudaKernel(KernelContext& ctx) {
  const Tensor& step = ctx.Input("Step");
  const Tensor& base = ctx.Input("BaseRate");
  CheckScalar(step, "Step");
  CheckScalar(base, "BaseRate");
  Tensor* out = ctx.Output("Out");
  out->Allocate(base.dtype(), {1}, ctx.place());
  cuda::WarmupCosine(DeviceScalarOf(step), DeviceScalarOf(base), ReadWarmupCosineAttrs(ctx),
                     out->raw_data(), base.dtype() == DataType::kFloat64, CudaStream::Current());
  CheckCuda(cudaGetLastError(), "warmup_cosine_decay: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(sgd, Cuda, SgdCudaKernel);
RILL_REGISTER_KERNEL(momentum, Cuda, MomentumCudaKernel);
RILL_REGISTER_KERNEL(adam, Cuda, AdamCudaKernel);
RILL_REGISTER_KERNEL(adamw, Cuda, AdamWCudaKernel);
RILL_REGISTER_KERNEL(warmup_cosine_decay, Cuda, WarmupCosineCudaKernel);

}  // namespace rill
