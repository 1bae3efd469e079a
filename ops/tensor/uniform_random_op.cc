// uniform_random: Out = values drawn uniformly from [min, max).
#include <cmath>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void UniformRandomShape(ShapeContext& ctx) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) ctx.Check(d >= 0, "shape ", ShapeToString(shape), " has a negative dim");
  const float min = ctx.Attr<float>("min");
  const float max = ctx.Attr<float>("max");
  ctx.Check(min <= max, "min (", min, ") must not exceed max (", max, ")");
  ctx.SetOutput("Out", shape, ParseDataType(ctx.Attr<std::string>("dtype")));
}

void UniformRandomKernel(KernelContext& ctx) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  const double lo = ctx.Attr<float>("min");
  const double hi = ctx.Attr<float>("max");
  RILL_CHECK(lo <= hi, kInvalidArgument, "min (", lo, ") must not exceed max (", hi, ")");
  Tensor* out = ctx.Output("Out");
  std::mt19937_64& rng = ctx.rng();
  VisitFloatType(dtype, [&]<class T>() {
    T* o = out->Allocate<T>(shape);
    const int64_t n = out->numel();
    const T top = static_cast<T>(hi);
    const T below_top = std::nextafter(top, static_cast<T>(lo));
    for (int64_t i = 0; i < n; ++i) {
      // The top 53 bits of a draw, scaled to [0, 1).
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      T v = static_cast<T>(lo + (hi - lo) * u);
      // Rounding to T may land on max itself; keep the interval half-open.
      if (v >= top && lo < hi) v = below_top;
      o[i] = v;
    }
  });
}

}  // namespace

RILL_REGISTER_OP(uniform_random,
                 OpSchema("uniform_random")
                     .Doc("Out = uniform random values in [min, max), from the op's generator.")
                     .Output("Out", "the random tensor")
                     .RequiredAttr("shape", AttrType::kInts, "dims of Out, each >= 0", AtLeast(0))
                     .Attr("dtype", "float32", "element type of Out", OneOf({"float32", "float64"}))
                     .Attr("min", -1.0f, "lower bound (inclusive)")
                     .Attr("max", 1.0f, "upper bound (exclusive)")
                     .Attr("seed", 0, "generator seed; 0 derives one from the program's seed")
                     .InferShape(UniformRandomShape)
                     .CpuKernel(UniformRandomKernel));

}  // namespace rill
