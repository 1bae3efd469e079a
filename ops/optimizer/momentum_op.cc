// momentum: VelocityOut = mu * Velocity + Grad; ParamOut = Param - lr * VelocityOut,
// or with Nesterov Param - lr * (Grad + mu * VelocityOut). Updates in place.
#include <cstring>

#include "ops/optimizer/optimizer_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void MomentumShape(ShapeContext& ctx) {
  const DataType t = ctx.InputType("Param");
  ctx.Check(t == DataType::kFloat32 || t == DataType::kFloat64,
            "Param must be float32 or float64, is ", DataTypeName(t));
  CheckLikeParam(ctx, "Grad");
  CheckLikeParam(ctx, "Velocity");
  CheckScalarSlot(ctx, "LearningRate");
  ctx.SetOutput("ParamOut", ctx.InputShape("Param"), t);
  ctx.SetOutput("VelocityOut", ctx.InputShape("Param"), t);
}

template <class T>
void MomentumUpdate(T* __restrict p, T* __restrict v, const T* __restrict g, int64_t n, T mu, T lr,
                    bool nesterov) {
  if (nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      const T vi = mu * v[i] + g[i];
      v[i] = vi;
      p[i] -= lr * (g[i] + mu * vi);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T vi = mu * v[i] + g[i];
      v[i] = vi;
      p[i] -= lr * vi;
    }
  }
}

void MomentumKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  // The velocity decays everywhere, so a sparse gradient is applied dense.
  const Tensor dense =
      ctx.InputIsSelectedRows("Grad") ? SparseGrad(ctx, param).ToDense() : Tensor();
  const Tensor& grad = dense.initialized() ? dense : ctx.Input("Grad");
  const MomentumArgs args = ReadMomentumArgs(ctx, param, grad);
  const double lr = ScalarValue(args.learning_rate);
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* v_in = args.velocity.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = param.numel();
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    // In the usual case the outputs are the inputs and keep their buffers.
    T* p = args.param_out->Allocate<T>(param.shape());
    T* v = args.velocity_out->Allocate<T>(args.velocity.shape());
    RILL_CHECK(p != v && p != g && v != g, kInvalidArgument,
               "ParamOut, VelocityOut and Grad must not share memory");
    if (p != p_in) std::memcpy(p, p_in, bytes);
    if (v != v_in) std::memcpy(v, v_in, bytes);
    MomentumUpdate(p, v, g, n, static_cast<T>(args.mu), static_cast<T>(lr), args.nesterov);
  });
}

}  // namespace

RILL_REGISTER_OP(momentum,
                 OpSchema("momentum")
                     .Doc("Velocity = mu * Velocity + Grad; Param -= lr * Velocity "
                          "(Nesterov: Param -= lr * (Grad + mu * Velocity)).")
                     .Input("Param", "the parameter")
                     .Input("Grad", "its gradient, same shape and type")
                     .Input("Velocity", "the running velocity, same shape and type")
                     .Input("LearningRate", "learning rate, one float element")
                     .Output("ParamOut", "the updated parameter (usually Param itself)")
                     .Output("VelocityOut", "the updated velocity (usually Velocity itself)")
                     .Attr("mu", 0.9f, "the momentum factor")
                     .Attr("use_nesterov", false, "use Nesterov momentum")
                     .InferShape(MomentumShape)
                     .CpuKernel(MomentumKernel));

}  // namespace rill
