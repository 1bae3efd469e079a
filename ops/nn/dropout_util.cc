#include "ops/nn/dropout_util.h"

#include <cmath>

#include "rill/op_desc.h"

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

}  // namespace

DropoutArgs ReadDropoutArgs(KernelContext& ctx) {
  const DropoutArgs args{.x = ctx.Input("X"),
                         .p = ctx.Attr<float>("dropout_prob"),
                         .is_test = ctx.Attr<bool>("is_test"),
                         .upscale = UpscaleInTrain(ctx.op()),
                         .out = ctx.Output("Out"),
                         .mask = ctx.HasOutput("Mask") ? ctx.Output("Mask") : nullptr};
  RILL_CHECK(args.is_test || args.mask != nullptr, kInvalidArgument,
             "dropout in training (is_test=false) needs the Mask output");
  return args;
}

template <class T>
void DrawDropoutMask(std::mt19937_64& generator, float p, bool upscale, T* m, int64_t n) {
  // An element is dropped when its draw is below threshold: P = threshold / 2^21 ~ p.
  const uint64_t threshold =
      static_cast<uint64_t>(std::llround(static_cast<double>(p) * (kDrawMask + 1)));
  const T kept = p >= 1.0f ? T(0) : (upscale ? T(1) / (T(1) - static_cast<T>(p)) : T(1));
  SplitMix64 rng(generator());
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
}

template void DrawDropoutMask<float>(std::mt19937_64&, float, bool, float*, int64_t);
template void DrawDropoutMask<double>(std::mt19937_64&, float, bool, double*, int64_t);

DropoutGradArgs ReadDropoutGradArgs(KernelContext& ctx) {
  const Tensor& mask = ctx.Input("Mask");
  Tensor* dx = ctx.Output("X@GRAD");
  // Mask's type is checked before Out@GRAD, as in the kernels' type dispatch.
  VisitFloatType(mask.dtype(), []<class T>() {});
  const Tensor* dy = nullptr;
  if (ctx.InputReady("Out@GRAD")) {
    dy = &ctx.Input("Out@GRAD");
    RILL_CHECK(dy->shape() == mask.shape(), kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(dy->shape()), " but Mask has shape ", ShapeToString(mask.shape()));
  }
  return {mask, dy, dx};
}

}  // namespace rill
