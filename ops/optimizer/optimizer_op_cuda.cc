// The optimizer ops' CUDA kernels (sgd, momentum, adam) for dense gradients:
// outputs allocated on the op's device, work launched on the stream the
// executor is launching on (CudaStream::Current()); device code in
// optimizer_cuda.cu. The one-element inputs (LearningRate, Beta1Pow,
// Beta2Pow) are device memory here: only their shapes and types are checked
// on the host, their values are read by the kernels. Outputs are usually their
// inputs (in place); the kernels also write separate outputs.
#include "ops/optimizer/optimizer_cuda.h"
#include "ops/optimizer/optimizer_util.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// ReadScalar's checks (optimizer_util.cc), with the value left on the device.
cuda::DeviceScalar DeviceScalarOf(const Tensor& t, const char* slot) {
  RILL_CHECK(t.numel() == 1, kInvalidArgument, slot, " must hold one element, is ", t.Describe());
  RILL_CHECK(t.dtype() == DataType::kFloat32 || t.dtype() == DataType::kFloat64, kInvalidArgument,
             slot, " must be float32 or float64, is ", t.Describe());
  return {t.raw_data(), t.dtype() == DataType::kFloat64};
}

void FailSparse(const char* op) {
  Fail(ErrorCode::kUnimplemented, op, " on cuda: selected-rows gradients not supported yet");
}

void SgdCudaKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  const cuda::DeviceScalar lr = DeviceScalarOf(ctx.Input("LearningRate"), "LearningRate");
  if (ctx.InputIsSelectedRows("Grad")) FailSparse("sgd");
  const Tensor& grad = ctx.Input("Grad");
  RILL_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(), kInvalidArgument,
             "Grad ", grad.Describe(), " does not match Param ", param.Describe());
  Tensor* param_out = ctx.Output("ParamOut");
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = param.numel();
    // In the usual case ParamOut is Param and keeps its buffer: p == p_in.
    const Shape shape = param.shape();
    param_out->Allocate(param.dtype(), shape, ctx.place());
    T* p = param_out->mutable_data<T>();
    RILL_CHECK(p != g, kInvalidArgument, "ParamOut may not share memory with Grad");
    cuda::Sgd(p_in, g, lr, p, n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "sgd: kernel launch");
}

void MomentumCudaKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  if (ctx.InputIsSelectedRows("Grad")) FailSparse("momentum");
  const Tensor& grad = ctx.Input("Grad");
  const Tensor& velocity = ctx.Input("Velocity");
  const cuda::DeviceScalar lr = DeviceScalarOf(ctx.Input("LearningRate"), "LearningRate");
  const double mu = DecimalDouble(ctx.Attr<float>("mu"));
  const bool nesterov = ctx.Attr<bool>("use_nesterov");
  RILL_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(), kInvalidArgument,
             "Grad ", grad.Describe(), " does not match Param ", param.Describe());
  RILL_CHECK(velocity.shape() == param.shape() && velocity.dtype() == param.dtype(),
             kInvalidArgument, "Velocity ", velocity.Describe(), " does not match Param ",
             param.Describe());
  Tensor* param_out = ctx.Output("ParamOut");
  Tensor* velocity_out = ctx.Output("VelocityOut");
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* v_in = velocity.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = param.numel();
    const Shape shape = param.shape();
    // In the usual case the outputs are the inputs and keep their buffers.
    param_out->Allocate(param.dtype(), shape, ctx.place());
    velocity_out->Allocate(param.dtype(), shape, ctx.place());
    T* p = param_out->mutable_data<T>();
    T* v = velocity_out->mutable_data<T>();
    RILL_CHECK(p != v && p != g && v != g, kInvalidArgument,
               "ParamOut, VelocityOut and Grad must not share memory");
    cuda::Momentum(p_in, v_in, g, lr, mu, nesterov, p, v, n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "momentum: kernel launch");
}

void AdamCudaKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  if (ctx.InputIsSelectedRows("Grad")) FailSparse("adam");
  const Tensor& grad = ctx.Input("Grad");
  const Tensor& moment1 = ctx.Input("Moment1");
  const Tensor& moment2 = ctx.Input("Moment2");
  const Tensor& beta1_pow = ctx.Input("Beta1Pow");
  const Tensor& beta2_pow = ctx.Input("Beta2Pow");
  const cuda::DeviceScalar lr = DeviceScalarOf(ctx.Input("LearningRate"), "LearningRate");
  const cuda::DeviceScalar pow1 = DeviceScalarOf(beta1_pow, "Beta1Pow");
  const cuda::DeviceScalar pow2 = DeviceScalarOf(beta2_pow, "Beta2Pow");
  const DataType pow1_type = beta1_pow.dtype();
  const DataType pow2_type = beta2_pow.dtype();
  const Shape pow1_shape = beta1_pow.shape();
  const Shape pow2_shape = beta2_pow.shape();
  cuda::AdamAttrs attrs;
  attrs.beta1 = DecimalDouble(ctx.Attr<float>("beta1"));
  attrs.beta2 = DecimalDouble(ctx.Attr<float>("beta2"));
  attrs.epsilon = DecimalDouble(ctx.Attr<float>("epsilon"));
  // The CPU kernel's check that Beta1Pow and Beta2Pow are below 1 needs their
  // values, which are on the device: it is not made here.
  RILL_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(), kInvalidArgument,
             "Grad ", grad.Describe(), " does not match Param ", param.Describe());
  for (const Tensor* t : {&moment1, &moment2}) {
    RILL_CHECK(t->shape() == param.shape() && t->dtype() == param.dtype(), kInvalidArgument,
               "Moment1 and Moment2 must match Param ", param.Describe(), "; one is ",
               t->Describe());
  }
  Tensor* param_out = ctx.Output("ParamOut");
  Tensor* moment1_out = ctx.Output("Moment1Out");
  Tensor* moment2_out = ctx.Output("Moment2Out");
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* m_in = moment1.data<T>();
    const T* v_in = moment2.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = param.numel();
    const Shape shape = param.shape();
    // In the usual case the outputs are the inputs and keep their buffers.
    param_out->Allocate(param.dtype(), shape, ctx.place());
    moment1_out->Allocate(param.dtype(), shape, ctx.place());
    moment2_out->Allocate(param.dtype(), shape, ctx.place());
    T* p = param_out->mutable_data<T>();
    T* m = moment1_out->mutable_data<T>();
    T* v = moment2_out->mutable_data<T>();
    RILL_CHECK(p != m && p != v && m != v && p != g && m != g && v != g, kInvalidArgument,
               "ParamOut, Moment1Out, Moment2Out and Grad must not share memory");
    cuda::Adam(p_in, m_in, v_in, g, lr, pow1, pow2, attrs, p, m, v, n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "adam: kernel launch");
  // After the update, which reads Beta1Pow and Beta2Pow (usually these outputs).
  Tensor* pow1_out = ctx.Output("Beta1PowOut");
  Tensor* pow2_out = ctx.Output("Beta2PowOut");
  pow1_out->Allocate(pow1_type, pow1_shape, ctx.place());
  pow2_out->Allocate(pow2_type, pow2_shape, ctx.place());
  cuda::AdamAdvancePowers(pow1, pow2, attrs, pow1_out->raw_data(), pow2_out->raw_data(),
                          CudaStream::Current());
  CheckCuda(cudaGetLastError(), "adam: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(sgd, Cuda, SgdCudaKernel);
RILL_REGISTER_KERNEL(momentum, Cuda, MomentumCudaKernel);
RILL_REGISTER_KERNEL(adam, Cuda, AdamCudaKernel);

}  // namespace rill
