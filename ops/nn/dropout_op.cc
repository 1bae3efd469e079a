// dropout: in training, zeroes each element of X with probability
// dropout_prob and records the multiplier applied to each element in Mask;
// at test time passes X through (scaled by 1 - p for downgrade_in_infer).
#include <cstdint>
#include <vector>

#include "ops/nn/dropout_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void DropoutKernel(KernelContext& ctx) {
  const DropoutArgs args = ReadDropoutArgs(ctx);
  const Tensor& x = args.x;
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    if (args.is_test) {
      const T keep = DropoutTestScale<T>(args.p, args.upscale);
      T* o = args.out->Allocate<T>(x.shape());
      for (int64_t i = 0; i < n; ++i) o[i] = in[i] * keep;
      if (args.mask != nullptr) {
        T* m = args.mask->Allocate<T>(x.shape());
        for (int64_t i = 0; i < n; ++i) m[i] = keep;
      }
      return;
    }
    T* m = args.mask->Allocate<T>(x.shape());
    DrawDropoutMask(ctx.rng(), args.p, args.upscale, m, n);
    T* o = args.out->Allocate<T>(x.shape());
    for (int64_t k = 0; k < n; ++k) o[k] = in[k] * m[k];
  });
}

void DropoutShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const DataType type = ctx.InputType("X");
  ctx.Check(ctx.Attr<bool>("is_test") || ctx.HasOutput("Mask"),
            "dropout in training (is_test=false) needs the Mask output");
  ctx.SetOutput("Out", x, type);
  ctx.SetOutput("Mask", x, type);
}

// X@GRAD = Out@GRAD * Mask. A missing Out@GRAD means zero.
void DropoutGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const DropoutGradArgs a = ReadDropoutGradArgs(ctx);
  VisitFloatType(a.mask.dtype(), [&]<class T>() {
    const T* m = a.mask.data<T>();
    const int64_t n = a.mask.numel();
    if (a.dy == nullptr) {
      T* g = a.dx->Allocate<T>(a.mask.shape());
      for (int64_t i = 0; i < n; ++i) g[i] = T(0);
      return;
    }
    const T* dy = a.dy->data<T>();
    T* g = a.dx->Allocate<T>(a.mask.shape());
    for (int64_t i = 0; i < n; ++i) g[i] = dy[i] * m[i];
  });
}

void DropoutGradShape(ShapeContext& ctx) {
  const Shape& mask = ctx.InputShape("Mask");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(mask, ctx.InputShape("Out@GRAD")), "Out@GRAD shape ",
              ShapeToString(ctx.InputShape("Out@GRAD")), " differs from Mask shape ",
              ShapeToString(mask));
  }
  ctx.SetOutput("X@GRAD", mask, ctx.InputType("Mask"));
}

std::vector<proto::OpDesc> DropoutGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("dropout_grad");
  SetInput(&grad, "Mask", {OutputVar(fwd, "Mask")});
  SetInput(&grad, "Out@GRAD", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(
    dropout,
    OpSchema("dropout")
        .Doc("Training: Out = X * Mask, Mask 0 with probability dropout_prob. Test: Out = X "
             "(upscale_in_train) or X * (1 - dropout_prob) (downgrade_in_infer).")
        .Input("X", "input tensor")
        .Output("Out", "result, same shape and type as X")
        .Output("Mask",
                "the multiplier applied to each element: 0 or 1/(1-p) (upscale_in_train), "
                "0 or 1 (downgrade_in_infer); needed in training",
                kOptional | kNoGradient)
        .Attr("dropout_prob", 0.5f, "probability of zeroing an element", InRange(0.0, 1.0))
        .Attr("is_test", false, "inference mode: no elements are dropped")
        .Attr("seed", 0, "random seed of this op; 0: derived from the program's random_seed")
        .Attr("dropout_implementation", "upscale_in_train",
              "upscale_in_train: kept elements scaled by 1/(1-p) in training; "
              "downgrade_in_infer: outputs scaled by 1-p at test time",
              OneOf({"upscale_in_train", "downgrade_in_infer"}))
        .InferShape(DropoutShape)
        .CpuKernel(DropoutKernel)
        .Grad(DropoutGrad));

RILL_REGISTER_OP(dropout_grad,
                 OpSchema("dropout_grad")
                     .Doc("X@GRAD = Out@GRAD * Mask.")
                     .Input("Mask", "the forward Mask", kNoGradient)
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .InferShape(DropoutGradShape)
                     .CpuKernel(DropoutGradKernel));

}  // namespace rill
