// pool2d: max or average pooling over windows of NCHW images, and its gradient.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/nn/im2col.h"
#include "runtime/kernel_context.h"
#include "runtime/op_desc.h"
#include "runtime/op_registry.h"
#include "runtime/shape_context.h"

namespace rill {
namespace {

struct PoolParams {
  bool is_max = true;
  bool global = false;
  bool exclusive = true;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
};

// Reads and checks the attributes (shape inference also runs before validation).
template <class Ctx>
PoolParams ReadPoolParams(const Ctx& ctx) {
  auto pair = [&](const char* name, int64_t min) {
    auto v = ctx.template Attr<std::vector<int64_t>>(name);
    RILL_CHECK(v.size() == 2 && v[0] >= min && v[1] >= min, kInvalidArgument, "pool2d: attribute ",
               name, " must be 2 values (height, width) >= ", min, ", is ", ShapeToString(v));
    return v;
  };
  const std::string type = ctx.template Attr<std::string>("pooling_type");
  RILL_CHECK(type == "max" || type == "avg", kInvalidArgument,
             "pool2d: pooling_type must be \"max\" or \"avg\", is \"", type, "\"");
  PoolParams p;
  p.is_max = type == "max";
  p.global = ctx.template Attr<bool>("global_pooling");
  p.exclusive = ctx.template Attr<bool>("exclusive");
  const auto ksize = pair("ksize", 1);
  const auto strides = pair("strides", 1);
  const auto paddings = pair("paddings", 0);
  p.kernel_h = ksize[0];
  p.kernel_w = ksize[1];
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  p.pad_h = paddings[0];
  p.pad_w = paddings[1];
  return p;
}

// Checks X against the attributes and returns Out's shape. With
// global_pooling the window is the whole (possibly unknown) plane.
Shape PoolOutputShape(const Shape& x, const PoolParams& p) {
  RILL_CHECK(x.size() == 4, kInvalidArgument, "pool2d: X must be [N, C, H, W], is ",
             ShapeToString(x));
  RILL_CHECK(x[2] != 0 && x[3] != 0, kInvalidArgument, "pool2d: X ", ShapeToString(x),
             " has an empty plane");
  if (p.global) return {x[0], x[1], 1, 1};
  RILL_CHECK(p.pad_h < p.kernel_h && p.pad_w < p.kernel_w, kInvalidArgument, "pool2d: paddings [",
             p.pad_h, ", ", p.pad_w, "] must be smaller than ksize [", p.kernel_h, ", ", p.kernel_w,
             "]");
  const int64_t kernel[2] = {p.kernel_h, p.kernel_w};
  const int64_t pads[2] = {p.pad_h, p.pad_w};
  const int64_t strides[2] = {p.stride_h, p.stride_w};
  Shape out{x[0], x[1], -1, -1};
  for (int k = 0; k < 2; ++k) {
    const int64_t in = x[2 + k];
    RILL_CHECK(in < 0 || in + 2 * pads[k] >= kernel[k], kInvalidArgument, "pool2d: ksize [",
               p.kernel_h, ", ", p.kernel_w, "] is larger than X ", ShapeToString(x),
               " padded by [", p.pad_h, ", ", p.pad_w, "]");
    out[2 + k] = WindowOutputSize(in, kernel[k], pads[k], strides[k]);
  }
  return out;
}

void InferPool2dShape(ShapeContext& ctx) {
  const PoolParams p = ReadPoolParams(ctx);
  ctx.SetOutput("Out", PoolOutputShape(ctx.InputShape("X"), p), ctx.InputType("X"));
}

void InferPool2dGradShape(ShapeContext& ctx) {
  const PoolParams p = ReadPoolParams(ctx);
  const Shape& x = ctx.InputShape("X");
  const Shape out = PoolOutputShape(x, p);
  if (ctx.HasInput("Out@GRAD")) {
    const Shape& dout = ctx.InputShape("Out@GRAD");
    ctx.Check(ShapesCompatible(dout, out), "pool2d_grad: Out@GRAD is ", ShapeToString(dout),
              " but the output is ", ShapeToString(out));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputType("X"));
}

// The concrete window sweep of one run (global pooling resolved).
struct PoolGeometry {
  int64_t planes;  // N * C
  int64_t height, width;
  int64_t out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
};

PoolGeometry MakeGeometry(const Shape& x, const Shape& out, const PoolParams& p) {
  PoolGeometry g;
  g.planes = x[0] * x[1];
  g.height = x[2];
  g.width = x[3];
  g.out_h = out[2];
  g.out_w = out[3];
  if (p.global) {
    g.kernel_h = x[2];
    g.kernel_w = x[3];
    g.stride_h = g.stride_w = 1;
    g.pad_h = g.pad_w = 0;
  } else {
    g.kernel_h = p.kernel_h;
    g.kernel_w = p.kernel_w;
    g.stride_h = p.stride_h;
    g.stride_w = p.stride_w;
    g.pad_h = p.pad_h;
    g.pad_w = p.pad_w;
  }
  return g;
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
  for (int64_t c = 0; c < g.planes; ++c) {
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      const Span ys = WindowSpan(oy, g.stride_h, g.pad_h, g.kernel_h, g.height);
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        fn(c, oy * g.out_w + ox, ys, x_spans[static_cast<size_t>(ox)]);
      }
    }
  }
}

void Pool2dKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const PoolParams p = ReadPoolParams(ctx);
  const Shape out_shape = PoolOutputShape(x.shape(), p);
  const PoolGeometry g = MakeGeometry(x.shape(), out_shape, p);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    T* o = out->Allocate<T>(out_shape);
    const int64_t in_plane = g.height * g.width;
    const int64_t out_plane = g.out_h * g.out_w;
    const T full_area = static_cast<T>(g.kernel_h * g.kernel_w);
    if (p.is_max) {
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
            p.exclusive ? static_cast<T>((ys.end - ys.begin) * (xs.end - xs.begin)) : full_area;
        o[c * out_plane + i] = sum / area;
      });
    }
  });
}

// Max: each output gradient goes to its window's first largest element,
// recomputed from X. Avg: it is spread evenly over the window.
void Pool2dGradKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  // A missing output gradient is zero.
  const Tensor* dout = ctx.HasInput("Out@GRAD") ? &ctx.Input("Out@GRAD") : nullptr;
  const PoolParams p = ReadPoolParams(ctx);
  const Shape out_shape = PoolOutputShape(x.shape(), p);
  RILL_CHECK(dout == nullptr || dout->shape() == out_shape, kInvalidArgument,
             "pool2d_grad: Out@GRAD is ", ShapeToString(dout ? dout->shape() : Shape{}),
             " but the output is ", ShapeToString(out_shape));
  if (!ctx.HasOutput("X@GRAD")) return;
  const PoolGeometry g = MakeGeometry(x.shape(), out_shape, p);
  Tensor* dx_tensor = ctx.Output("X@GRAD");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const T* dy = dout ? dout->data<T>() : nullptr;
    T* dx = dx_tensor->Allocate<T>(x.shape());
    std::fill(dx, dx + x.numel(), T(0));
    if (dy == nullptr) return;
    const int64_t in_plane = g.height * g.width;
    const int64_t out_plane = g.out_h * g.out_w;
    const T full_area = static_cast<T>(g.kernel_h * g.kernel_w);
    if (p.is_max) {
      ForEachWindow(g, [&](int64_t c, int64_t i, Span ys, Span xs) {
        const int64_t at = ArgMax(in + c * in_plane, g.width, ys, xs);
        dx[c * in_plane + at] += dy[c * out_plane + i];
      });
    } else {
      ForEachWindow(g, [&](int64_t c, int64_t i, Span ys, Span xs) {
        const T area =
            p.exclusive ? static_cast<T>((ys.end - ys.begin) * (xs.end - xs.begin)) : full_area;
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
