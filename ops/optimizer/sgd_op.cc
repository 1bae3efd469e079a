// sgd: ParamOut = Param - LearningRate * Grad, in place when ParamOut is Param.
#include <cstring>

#include "ops/optimizer/optimizer_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SgdShape(ShapeContext& ctx) {
  const DataType t = ctx.InputType("Param");
  ctx.Check(t == DataType::kFloat32 || t == DataType::kFloat64,
            "Param must be float32 or float64, is ", DataTypeName(t));
  CheckLikeParam(ctx, "Grad");
  CheckScalarSlot(ctx, "LearningRate");
  ctx.SetOutput("ParamOut", ctx.InputShape("Param"), t);
}

template <class T>
void SgdUpdate(T* __restrict p, const T* __restrict g, int64_t n, T lr) {
  for (int64_t i = 0; i < n; ++i) p[i] -= lr * g[i];
}

// Selected rows: only the rows the gradient holds change.
void SparseSgdKernel(KernelContext& ctx, const Tensor& param, double lr) {
  const SelectedRows grad = SparseGrad(ctx, param);
  Tensor* param_out = ctx.Output("ParamOut");
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const int64_t n = param.numel();
    T* p = param_out->Allocate<T>(param.shape());
    if (p != p_in) std::memcpy(p, p_in, static_cast<size_t>(n) * sizeof(T));
    const int64_t width = param.dim(0) == 0 ? 0 : n / param.dim(0);
    const T* g = grad.value.data<T>();
    for (size_t i = 0; i < grad.rows.size(); ++i) {
      SgdUpdate(p + grad.rows[i] * width, g + static_cast<int64_t>(i) * width, width,
                static_cast<T>(lr));
    }
  });
}

void SgdKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  const double lr = ReadScalar(ctx.Input("LearningRate"), "LearningRate");
  if (ctx.InputIsSelectedRows("Grad")) {
    SparseSgdKernel(ctx, param, lr);
    return;
  }
  const SgdDense dense = ReadSgdDense(ctx, param);
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* g = dense.grad.data<T>();
    const int64_t n = param.numel();
    // In the usual case ParamOut is Param and keeps its buffer: p == p_in.
    T* p = dense.param_out->Allocate<T>(param.shape());
    RILL_CHECK(p != g, kInvalidArgument, "ParamOut may not share memory with Grad");
    if (p != p_in) std::memcpy(p, p_in, static_cast<size_t>(n) * sizeof(T));
    SgdUpdate(p, g, n, static_cast<T>(lr));
  });
}

}  // namespace

RILL_REGISTER_OP(sgd, OpSchema("sgd")
                          .Doc("ParamOut = Param - LearningRate * Grad.")
                          .Input("Param", "the parameter")
                          .Input("Grad", "its gradient, same shape and type; or selected rows")
                          .Input("LearningRate", "learning rate, one float element")
                          .Output("ParamOut", "the updated parameter (usually Param itself)")
                          .InferShape(SgdShape)
                          .CpuKernel(SgdKernel));

}  // namespace rill
