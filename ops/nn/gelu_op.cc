// gelu: Out = X * Phi(X) = 0.5 * X * (1 + erf(X / sqrt(2))), the exact form
// (Fluid's default, approximate=false). Its gradient op reads X. erf and exp
// come from vector_math.h (float32: glibc's vector math library where there
// is one; it made gelu 10x faster than the scalar erff).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/math/unary.h"
#include "ops/math/vector_math.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/parallel_for.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 * pi)
constexpr int64_t kBlock = 256;  // values per pass through the vector functions

// out = 0.5 x (1 + erf(x / sqrt 2)).
template <class T>
void GeluLoop(const T* x, T* out, int64_t n) {
  T erf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    for (int64_t k = 0; k < len; ++k) erf[k] = x[b + k] * static_cast<T>(kInvSqrt2);
    VectorErf(erf, erf, len);
    for (int64_t k = 0; k < len; ++k) out[b + k] = T(0.5) * x[b + k] * (T(1) + erf[k]);
  }
}

// dx = dy (Phi(x) + x phi(x)), phi the standard normal density; dy null: zero.
template <class T>
void GeluGradLoop(const T* x, const T* dy, T* dx, int64_t n) {
  if (dy == nullptr) {
    std::fill(dx, dx + n, T(0));
    return;
  }
  T erf[kBlock], density[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    for (int64_t k = 0; k < len; ++k) {
      erf[k] = x[b + k] * static_cast<T>(kInvSqrt2);
      density[k] = T(-0.5) * x[b + k] * x[b + k];
    }
    VectorErf(erf, erf, len);
    VectorExp(density, density, len);
    for (int64_t k = 0; k < len; ++k) {
      const T cdf = T(0.5) * (T(1) + erf[k]);
      const T pdf = static_cast<T>(kInvSqrt2Pi) * density[k];
      dx[b + k] = dy[b + k] * (cdf + x[b + k] * pdf);
    }
  }
}

// Parts are runs of whole blocks (ParallelRanges' align), so each value meets
// the vector functions where it would in one pass.
void GeluKernel(KernelContext& ctx) {
  UnaryForwardFrame(ctx, Place::Cpu(), []<class T>(const T* x, T* out, int64_t n) {
    ParallelRanges(n, kMinValuesPerPart, kBlock,
                   [&](int64_t b, int64_t e) { GeluLoop<T>(x + b, out + b, e - b); });
  });
}

void GeluGradKernel(KernelContext& ctx) {
  UnaryBackwardFrame(ctx, "X", Place::Cpu(),
                     []<class T>(const T* x, const T* dy, T* dx, int64_t n) {
                       ParallelRanges(n, kMinValuesPerPart, kBlock, [&](int64_t b, int64_t e) {
                         GeluGradLoop<T>(x + b, dy == nullptr ? nullptr : dy + b, dx + b, e - b);
                       });
                     });
}

void GeluGradShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(x, ctx.InputShape("Out@GRAD")), "gelu_grad: Out@GRAD (",
              ctx.InputName("Out@GRAD"), ") is ", ShapeToString(ctx.InputShape("Out@GRAD")),
              " but X (", ctx.InputName("X"), ") is ", ShapeToString(x));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputType("X"));
}

// The gradient needs X only: Out need not be kept for the backward pass.
std::vector<proto::OpDesc> GeluGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("gelu_grad");
  const std::string x = InputVar(fwd, "X");
  SetInput(&grad, "X", {x});
  SetInput(&grad, "Out@GRAD", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "X@GRAD", {GradVarName(x)});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(gelu, OpSchema("gelu")
                           .Doc("Out = 0.5 * X * (1 + erf(X / sqrt(2))), elementwise.")
                           .Input("X", "input tensor")
                           .Output("Out", "result, same shape and type as X")
                           .InferShape(SameShapeAs("X", "Out"))
                           .CpuKernel(GeluKernel)
                           .Grad(GeluGrad));

RILL_REGISTER_OP(gelu_grad, OpSchema("gelu_grad")
                                .Doc("X@GRAD = Out@GRAD * (Phi(X) + X * phi(X)).")
                                .Input("X", "the forward input")
                                .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                                .Output("X@GRAD", "gradient of X", kOptional)
                                .InferShape(GeluGradShape)
                                .CpuKernel(GeluGradKernel));

}  // namespace rill
