// sgd: ParamOut = Param - LearningRate * Grad, in place when ParamOut is Param.
#include <charconv>
#include <cstring>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// A float32 such as 0.001f stands for the decimal 0.001: widening it through
// its shortest decimal form gives the double a Python user would have written.
double DecimalDouble(float f) {
  char text[32];
  const auto printed = std::to_chars(text, text + sizeof(text), f);
  double d = static_cast<double>(f);
  if (printed.ec == std::errc()) std::from_chars(text, printed.ptr, d);
  return d;
}

double ReadScalar(const Tensor& t, const char* slot) {
  RILL_CHECK(t.numel() == 1, kInvalidArgument, slot, " must hold one element, is ", t.Describe());
  if (t.dtype() == DataType::kFloat32) return DecimalDouble(t.data<float>()[0]);
  RILL_CHECK(t.dtype() == DataType::kFloat64, kInvalidArgument, slot,
             " must be float32 or float64, is ", t.Describe());
  return t.data<double>()[0];
}

void CheckLikeParam(ShapeContext& ctx, const std::string& slot) {
  const Shape& param = ctx.InputShape("Param");
  const Shape& s = ctx.InputShape(slot);
  ctx.Check(ShapesCompatible(s, param), slot, " ", ShapeToString(s), " differs from Param ",
            ShapeToString(param));
  ctx.Check(ctx.InputType(slot) == ctx.InputType("Param"), slot, " is ",
            DataTypeName(ctx.InputType(slot)), " but Param is ",
            DataTypeName(ctx.InputType("Param")));
}

void CheckScalarSlot(ShapeContext& ctx, const std::string& slot) {
  const Shape& s = ctx.InputShape(slot);
  bool one = true;
  for (int64_t d : s) one = one && (d == 1 || d == -1);
  ctx.Check(one, slot, " must hold one element, has shape ", ShapeToString(s));
  const DataType t = ctx.InputType(slot);
  ctx.Check(t == DataType::kFloat32 || t == DataType::kFloat64, slot,
            " must be float32 or float64, is ", DataTypeName(t));
}

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

void SgdKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  const Tensor& grad = ctx.Input("Grad");
  const double lr = ReadScalar(ctx.Input("LearningRate"), "LearningRate");
  RILL_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(), kInvalidArgument,
             "Grad ", grad.Describe(), " does not match Param ", param.Describe());
  Tensor* param_out = ctx.Output("ParamOut");
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = param.numel();
    // In the usual case ParamOut is Param and keeps its buffer: p == p_in.
    T* p = param_out->Allocate<T>(param.shape());
    RILL_CHECK(p != g, kInvalidArgument, "ParamOut may not share memory with Grad");
    if (p != p_in) std::memcpy(p, p_in, static_cast<size_t>(n) * sizeof(T));
    SgdUpdate(p, g, n, static_cast<T>(lr));
  });
}

}  // namespace

RILL_REGISTER_OP(sgd, OpSchema("sgd")
                          .Doc("ParamOut = Param - LearningRate * Grad.")
                          .Input("Param", "the parameter")
                          .Input("Grad", "its gradient, same shape and type")
                          .Input("LearningRate", "learning rate, one float element")
                          .Output("ParamOut", "the updated parameter (usually Param itself)")
                          .InferShape(SgdShape)
                          .CpuKernel(SgdKernel));

}  // namespace rill
