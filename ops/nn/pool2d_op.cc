// pool2d: max or average pooling over windows of NCHW images, and its gradient.
#include <algorithm>
#include <vector>

#include "ops/nn/conv_pool_geometry.h"
#include "ops/nn/im2col.h"
#include "ops/nn/pool2x2.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void InferPool2dShape(ShapeContext& ctx) {
  const PoolParams p = ReadPoolParams(ctx);
  ctx.SetOutput("Out", PoolOutputShape(MakePoolGeometry(ctx.InputShape("X"), p)),
                ctx.InputType("X"));
}

void InferPool2dGradShape(ShapeContext& ctx) {
  const PoolParams p = ReadPoolParams(ctx);
  const Shape& x = ctx.InputShape("X");
  const Shape out = PoolOutputShape(MakePoolGeometry(x, p));
  if (ctx.HasInput("Out@GRAD")) {
    const Shape& dout = ctx.InputShape("Out@GRAD");
    ctx.Check(ShapesCompatible(dout, out), "pool2d_grad: Out@GRAD is ", ShapeToString(dout),
              " but the output is ", ShapeToString(out));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputType("X"));
}

// Window [begin, end) of output position o along one axis, clipped to the input.
struct Span {
  int64_t begin;
  int64_t end;
};
Span WindowSpan(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t in) {
  const int64_t start = o * stride - pad;
  return {std::max<int64_t>(start, 0), std::min(start + kernel, in)};
}

// Offset in the plane of the first largest element of the window (padding excluded).
template <class T>
int64_t ArgMax(const T* plane, int64_t width, Span ys, Span xs) {
  int64_t best = ys.begin * width + xs.begin;
  for (int64_t y = ys.begin; y < ys.end; ++y) {
    for (int64_t x = xs.begin; x < xs.end; ++x) {
      if (plane[y * width + x] > plane[best]) best = y * width + x;
    }
  }
  return best;
}

// Calls fn(plane index, output offset in plane, ys, xs) for every window.
template <class Fn>
void ForEachWindow(const PoolGeometry& g, Fn&& fn) {
  std::vector<Span> x_spans(static_cast<size_t>(g.out_w));
  for (int64_t ox = 0; ox < g.out_w; ++ox) {
    x_spans[static_cast<size_t>(ox)] = WindowSpan(ox, g.stride_w, g.pad_w, g.kernel_w, g.width);
  }
  const int64_t planes = g.batch * g.channels;
  for (int64_t c = 0; c < planes; ++c) {
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      const Span ys = WindowSpan(oy, g.stride_h, g.pad_h, g.kernel_h, g.height);
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        fn(c, oy * g.out_w + ox, ys, x_spans[static_cast<size_t>(ox)]);
      }
    }
  }
}

void Pool2dKernel(KernelContext& ctx) {
  const PoolRun run = CheckPoolKernel(ctx, false);
  const PoolGeometry& g = run.geo;
  const Tensor& x = *run.x;
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    T* o = out->Allocate<T>(PoolOutputShape(g));
    const int64_t in_plane = g.height * g.width;
    const int64_t out_plane = g.out_h * g.out_w;
    const T full_area = static_cast<T>(g.kernel_h * g.kernel_w);
    if (IsPool2x2(g)) {
      Pool2x2Forward(g, in, o);
    } else if (g.is_max) {
      ForEachWindow(g, [&](int64_t c, int64_t i, Span ys, Span xs) {
        const T* plane = in + c * in_plane;
        o[c * out_plane + i] = plane[ArgMax(plane, g.width, ys, xs)];
      });
    } else {
      ForEachWindow(g, [&](int64_t c, int64_t i, Span ys, Span xs) {
        const T* plane = in + c * in_plane;
        T sum = 0;
        for (int64_t y = ys.begin; y < ys.end; ++y) {
          for (int64_t xx = xs.begin; xx < xs.end; ++xx) sum += plane[y * g.width + xx];
        }
        const T area =
            g.exclusive ? static_cast<T>((ys.end - ys.begin) * (xs.end - xs.begin)) : full_area;
        o[c * out_plane + i] = sum / area;
      });
    }
  });
}

// Max: each output gradient goes to its window's first largest element,
// recomputed from X. Avg: it is spread evenly over the window.
void Pool2dGradKernel(KernelContext& ctx) {
  const PoolRun run = CheckPoolKernel(ctx, true);
  const PoolGeometry& g = run.geo;
  const Tensor& x = *run.x;
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor* dx_tensor = ctx.Output("X@GRAD");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const T* dy = run.dout ? run.dout->data<T>() : nullptr;
    T* dx = dx_tensor->Allocate<T>(x.shape());
    if (dy != nullptr && IsPool2x2(g)) {
      Pool2x2Backward(g, in, dy, dx);
      return;
    }
    std::fill(dx, dx + x.numel(), T(0));
    if (dy == nullptr) return;
    const int64_t in_plane = g.height * g.width;
    const int64_t out_plane = g.out_h * g.out_w;
    const T full_area = static_cast<T>(g.kernel_h * g.kernel_w);
    if (g.is_max) {
      ForEachWindow(g, [&](int64_t c, int64_t i, Span ys, Span xs) {
        const int64_t at = ArgMax(in + c * in_plane, g.width, ys, xs);
        dx[c * in_plane + at] += dy[c * out_plane + i];
      });
    } else {
      ForEachWindow(g, [&](int64_t c, int64_t i, Span ys, Span xs) {
        const T area =
            g.exclusive ? static_cast<T>((ys.end - ys.begin) * (xs.end - xs.begin)) : full_area;
        const T share = dy[c * out_plane + i] / area;
        T* plane = dx + c * in_plane;
        for (int64_t y = ys.begin; y < ys.end; ++y) {
          for (int64_t xx = xs.begin; xx < xs.end; ++xx) plane[y * g.width + xx] += share;
        }
      });
    }
  });
}

// Declares the attributes pool2d and pool2d_grad share.
OpSchema WithPoolAttrs(OpSchema schema) {
  schema.Attr("pooling_type", "max", "\"max\" or \"avg\"", OneOf({"max", "avg"}))
      .RequiredAttr("ksize", AttrType::kInts, "window size (height, width)", PairAtLeast(1))
      .Attr("strides", std::vector<int64_t>{1, 1}, "window step (height, width)", PairAtLeast(1))
      .Attr("paddings", std::vector<int64_t>{0, 0},
            "padding on each side (height, width); padded cells never win a max and count "
            "in an average only when exclusive is false",
            PairAtLeast(0))
      .Attr("global_pooling", false, "pool each whole plane to 1x1 (ksize and paddings ignored)")
      .Attr("exclusive", true, "avg: divide by the count of non-padding elements in the window");
  return schema;
}

}  // namespace

RILL_REGISTER_OP(pool2d, WithPoolAttrs(OpSchema("pool2d")
                                           .Doc("Max or average pooling of NCHW images.")
                                           .Input("X", "images [N, C, H, W]")
                                           .Output("Out",
                                                   "[N, C, Ho, Wo] with Ho = (H + 2 * pad_h - "
                                                   "kh) / stride_h + 1, Wo likewise"))
                             .InferShape(InferPool2dShape)
                             .CpuKernel(Pool2dKernel)
                             .DefaultGrad());

RILL_REGISTER_OP(pool2d_grad,
                 WithPoolAttrs(OpSchema("pool2d_grad")
                                   .Doc("Gradient of pool2d with respect to X.")
                                   .Input("X", "the forward X")
                                   .Input("Out",
                                          "the forward Out (unused: max recomputes "
                                          "its argmax from X)",
                                          kOptional)
                                   .Input("Out@GRAD", "gradient of Out; absent means zero",
                                          kOptional)
                                   .Output("X@GRAD", "gradient of X", kOptional))
                     .InferShape(InferPool2dGradShape)
                     .CpuKernel(Pool2dGradKernel));

}  // namespace rill
