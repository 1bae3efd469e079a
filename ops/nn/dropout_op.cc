// dropout: in training, zeroes each element of X with probability
// dropout_prob and records the multiplier applied to each element in Mask;
// at test time passes X through (scaled by 1 - p for downgrade_in_infer).
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Each 64-bit random number yields three 21-bit uniform draws, one per element.
constexpr int kDrawBits = 21;
constexpr uint64_t kDrawMask = (uint64_t{1} << kDrawBits) - 1;

// The op's mt19937_64 is too slow to call once per three elements (it would
// dominate the kernel), so each run takes one number from it to start a
// SplitMix64 stream (Steele et al., 2014): a counter passed through a 64-bit
// mixing function, statistically strong and a few cycles per number.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// `kept` when the 21-bit draw is at least threshold, else 0. Branch-free: at
// p = 0.5 a branch would mispredict on every other element.
template <class T>
inline T MaskValue(uint64_t draw, uint64_t threshold, T kept) {
  const uint64_t dropped = (draw - threshold) >> 63;  // 1 when draw < threshold
  return kept * static_cast<T>(1 - dropped);
}

// Reads the attribute in place: a std::string copy would allocate every step.
bool UpscaleInTrain(const proto::OpDesc& op) {
  const proto::Attr* attr = FindAttr(op, "dropout_implementation");
  return attr == nullptr || attr->s() == "upscale_in_train";
}

void DropoutKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const float p = ctx.Attr<float>("dropout_prob");
  const bool is_test = ctx.Attr<bool>("is_test");
  const bool upscale = UpscaleInTrain(ctx.op());
  Tensor* out = ctx.Output("Out");
  Tensor* mask = ctx.HasOutput("Mask") ? ctx.Output("Mask") : nullptr;
  RILL_CHECK(is_test || mask != nullptr, kInvalidArgument,
             "dropout in training (is_test=false) needs the Mask output");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const int64_t n = x.numel();
    if (is_test) {
      const T keep = upscale ? T(1) : static_cast<T>(1.0 - static_cast<double>(p));
      T* o = out->Allocate<T>(x.shape());
      for (int64_t i = 0; i < n; ++i) o[i] = in[i] * keep;
      if (mask != nullptr) {
        T* m = mask->Allocate<T>(x.shape());
        for (int64_t i = 0; i < n; ++i) m[i] = keep;
      }
      return;
    }
    // An element is dropped when its draw is below threshold: P = threshold / 2^21 ~ p.
    const uint64_t threshold =
        static_cast<uint64_t>(std::llround(static_cast<double>(p) * (kDrawMask + 1)));
    const T kept = p >= 1.0f ? T(0) : (upscale ? T(1) / (T(1) - static_cast<T>(p)) : T(1));
    T* m = mask->Allocate<T>(x.shape());
    SplitMix64 rng(ctx.rng()());
    int64_t i = 0;
    for (; i + 3 <= n; i += 3) {
      const uint64_t r = rng.Next();
      m[i] = MaskValue(r & kDrawMask, threshold, kept);
      m[i + 1] = MaskValue((r >> kDrawBits) & kDrawMask, threshold, kept);
      m[i + 2] = MaskValue((r >> (2 * kDrawBits)) & kDrawMask, threshold, kept);
    }
    for (uint64_t r = rng.Next(); i < n; ++i, r >>= kDrawBits) {
      m[i] = MaskValue(r & kDrawMask, threshold, kept);
    }
    T* o = out->Allocate<T>(x.shape());
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
  const Tensor& mask = ctx.Input("Mask");
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(mask.dtype(), [&]<class T>() {
    const T* m = mask.data<T>();
    const int64_t n = mask.numel();
    if (!has_dy) {
      T* g = dx->Allocate<T>(mask.shape());
      for (int64_t i = 0; i < n; ++i) g[i] = T(0);
      return;
    }
    const Tensor& dy_t = ctx.Input("Out@GRAD");
    RILL_CHECK(dy_t.shape() == mask.shape(), kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(dy_t.shape()), " but Mask has shape ", ShapeToString(mask.shape()));
    const T* dy = dy_t.data<T>();
    T* g = dx->Allocate<T>(mask.shape());
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
