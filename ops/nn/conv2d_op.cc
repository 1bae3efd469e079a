// conv2d: 2-D convolution (cross-correlation) of NCHW images by im2col + GEMM, and its gradient.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/math/blas.h"
#include "ops/nn/im2col.h"
#include "runtime/kernel_context.h"
#include "runtime/op_desc.h"
#include "runtime/op_registry.h"
#include "runtime/shape_context.h"

namespace rill {
namespace {

struct ConvParams {
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
  int64_t groups;
};

// Reads and checks the attributes. Validation checks them too, but shape
// inference also runs from the builder, before validation.
template <class Ctx>
ConvParams ReadConvParams(const Ctx& ctx) {
  auto pair = [&](const char* name, int64_t min) {
    auto v = ctx.template Attr<std::vector<int64_t>>(name);
    RILL_CHECK(v.size() == 2 && v[0] >= min && v[1] >= min, kInvalidArgument, "conv2d: attribute ",
               name, " must be 2 values (height, width) >= ", min, ", is ", ShapeToString(v));
    return v;
  };
  const auto strides = pair("strides", 1);
  const auto paddings = pair("paddings", 0);
  const auto dilations = pair("dilations", 1);
  const int64_t groups = ctx.template Attr<int64_t>("groups");
  RILL_CHECK(groups >= 1, kInvalidArgument, "conv2d: attribute groups must be at least 1, is ",
             groups);
  return {strides[0], strides[1], paddings[0], paddings[1], dilations[0], dilations[1], groups};
}

// Checks Input and Filter against each other and the attributes and returns
// Output's shape. Input dims of -1 (known at run time only) pass unchecked.
Shape ConvOutputShape(const Shape& input, const Shape& filter, const ConvParams& p) {
  RILL_CHECK(input.size() == 4, kInvalidArgument, "conv2d: Input must be [N, C, H, W], is ",
             ShapeToString(input));
  RILL_CHECK(filter.size() == 4 &&
                 std::all_of(filter.begin(), filter.end(), [](int64_t d) { return d >= 1; }),
             kInvalidArgument,
             "conv2d: Filter must be [M, C / groups, kh, kw] with known dims, is ",
             ShapeToString(filter));
  RILL_CHECK(filter[0] % p.groups == 0, kInvalidArgument, "conv2d: Filter ", ShapeToString(filter),
             " has ", filter[0], " output channels, which groups = ", p.groups, " does not divide");
  RILL_CHECK(input[1] < 0 || input[1] == filter[1] * p.groups, kInvalidArgument, "conv2d: Input ",
             ShapeToString(input), " has ", input[1], " channels but Filter ",
             ShapeToString(filter), " with groups = ", p.groups, " expects ", filter[1] * p.groups);
  const int64_t pads[2] = {p.pad_h, p.pad_w};
  const int64_t strides[2] = {p.stride_h, p.stride_w};
  const int64_t dilations[2] = {p.dilation_h, p.dilation_w};
  Shape out{input[0], filter[0], -1, -1};
  for (int k = 0; k < 2; ++k) {
    const int64_t in = input[2 + k];
    const int64_t extent = dilations[k] * (filter[2 + k] - 1) + 1;
    RILL_CHECK(in < 0 || in + 2 * pads[k] >= extent, kInvalidArgument, "conv2d: Filter ",
               ShapeToString(filter), " (dilations [", p.dilation_h, ", ", p.dilation_w,
               "]) is larger than Input ", ShapeToString(input), " padded by [", p.pad_h, ", ",
               p.pad_w, "]");
    out[2 + k] = WindowOutputSize(in, filter[2 + k], pads[k], strides[k], dilations[k]);
  }
  return out;
}

void InferConv2dShape(ShapeContext& ctx) {
  const ConvParams p = ReadConvParams(ctx);
  const Shape out = ConvOutputShape(ctx.InputShape("Input"), ctx.InputShape("Filter"), p);
  const DataType dtype = ctx.InputType("Input");
  ctx.Check(ctx.InputType("Filter") == dtype, "conv2d: Filter is ",
            DataTypeName(ctx.InputType("Filter")), " but Input is ", DataTypeName(dtype));
  ctx.SetOutput("Output", out, dtype);
}

void InferConv2dGradShape(ShapeContext& ctx) {
  const ConvParams p = ReadConvParams(ctx);
  const Shape& input = ctx.InputShape("Input");
  const Shape& filter = ctx.InputShape("Filter");
  const Shape out = ConvOutputShape(input, filter, p);
  if (ctx.HasInput("Output@GRAD")) {
    const Shape& dout = ctx.InputShape("Output@GRAD");
    ctx.Check(ShapesCompatible(dout, out), "conv2d_grad: Output@GRAD is ", ShapeToString(dout),
              " but the output is ", ShapeToString(out));
  }
  ctx.SetOutput("Input@GRAD", input, ctx.InputType("Input"));
  ctx.SetOutput("Filter@GRAD", filter, ctx.InputType("Filter"));
}

// Sizes of one run: per image and per group of channels.
struct ConvLayout {
  Im2ColGeometry geo;  // of one image's channel group
  int64_t batch;
  int64_t groups;
  int64_t out_channels_per_group;  // rows of the GEMM
  int64_t in_group_size;           // elements of one channel group of an input image
  int64_t out_group_size;          // elements of one channel group of an output image
  int64_t filter_group_size;       // elements of one group's filters
  bool direct;                     // 1x1, stride 1, no padding: the image is its own column matrix
};

ConvLayout MakeLayout(const Shape& input, const Shape& filter, const Shape& out,
                      const ConvParams& p) {
  ConvLayout l;
  l.geo.channels = input[1] / p.groups;
  l.geo.height = input[2];
  l.geo.width = input[3];
  l.geo.kernel_h = filter[2];
  l.geo.kernel_w = filter[3];
  l.geo.stride_h = p.stride_h;
  l.geo.stride_w = p.stride_w;
  l.geo.pad_h = p.pad_h;
  l.geo.pad_w = p.pad_w;
  l.geo.dilation_h = p.dilation_h;
  l.geo.dilation_w = p.dilation_w;
  l.geo.out_h = out[2];
  l.geo.out_w = out[3];
  l.batch = input[0];
  l.groups = p.groups;
  l.out_channels_per_group = filter[0] / p.groups;
  l.in_group_size = l.geo.channels * l.geo.height * l.geo.width;
  l.out_group_size = l.out_channels_per_group * l.geo.col_cols();
  l.filter_group_size = l.out_channels_per_group * l.geo.col_rows();
  l.direct = filter[2] == 1 && filter[3] == 1 && p.stride_h == 1 && p.stride_w == 1 &&
             p.pad_h == 0 && p.pad_w == 0;
  return l;
}

// Grow-only column buffer, one per thread: kernels of different ops may run
// concurrently, and steady-state steps should not allocate.
template <class T>
T* ColumnScratch(int64_t elements) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < static_cast<size_t>(elements)) buffer.resize(static_cast<size_t>(elements));
  return buffer.data();
}

void Conv2dKernel(KernelContext& ctx) {
  const Tensor& input = ctx.Input("Input");
  const Tensor& filter = ctx.Input("Filter");
  const ConvParams p = ReadConvParams(ctx);
  const Shape out_shape = ConvOutputShape(input.shape(), filter.shape(), p);
  RILL_CHECK(filter.dtype() == input.dtype(), kInvalidArgument, "conv2d: Filter is ",
             DataTypeName(filter.dtype()), " but Input is ", DataTypeName(input.dtype()));
  const ConvLayout l = MakeLayout(input.shape(), filter.shape(), out_shape, p);
  Tensor* output = ctx.Output("Output");
  VisitFloatType(input.dtype(), [&]<class T>() {
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    T* y = output->Allocate<T>(out_shape);
    T* col = l.direct ? nullptr : ColumnScratch<T>(l.geo.col_rows() * l.geo.col_cols());
    for (int64_t n = 0; n < l.batch; ++n) {
      for (int64_t g = 0; g < l.groups; ++g) {
        const T* xg = x + (n * l.groups + g) * l.in_group_size;
        const T* cols = xg;
        if (!l.direct) {
          Im2Col(xg, l.geo, col);
          cols = col;
        }
        Gemm(false, false, l.out_channels_per_group, l.geo.col_cols(), l.geo.col_rows(), T(1),
             w + g * l.filter_group_size, cols, T(0), y + (n * l.groups + g) * l.out_group_size);
      }
    }
  });
}

// Filter@GRAD = sum over images of dOut * col^T; Input@GRAD = col2im(Filter^T * dOut).
void Conv2dGradKernel(KernelContext& ctx) {
  const Tensor& input = ctx.Input("Input");
  const Tensor& filter = ctx.Input("Filter");
  // A missing output gradient is zero.
  const Tensor* dout = ctx.HasInput("Output@GRAD") ? &ctx.Input("Output@GRAD") : nullptr;
  const ConvParams p = ReadConvParams(ctx);
  const Shape out_shape = ConvOutputShape(input.shape(), filter.shape(), p);
  RILL_CHECK(filter.dtype() == input.dtype(), kInvalidArgument, "conv2d_grad: Filter is ",
             DataTypeName(filter.dtype()), " but Input is ", DataTypeName(input.dtype()));
  RILL_CHECK(dout == nullptr || dout->shape() == out_shape, kInvalidArgument,
             "conv2d_grad: Output@GRAD is ", ShapeToString(dout ? dout->shape() : Shape{}),
             " but the output is ", ShapeToString(out_shape));
  const ConvLayout l = MakeLayout(input.shape(), filter.shape(), out_shape, p);
  Tensor* dinput = ctx.HasOutput("Input@GRAD") ? ctx.Output("Input@GRAD") : nullptr;
  Tensor* dfilter = ctx.HasOutput("Filter@GRAD") ? ctx.Output("Filter@GRAD") : nullptr;
  VisitFloatType(input.dtype(), [&]<class T>() {
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    const T* dy = dout ? dout->data<T>() : nullptr;
    T* dx = dinput ? dinput->Allocate<T>(input.shape()) : nullptr;
    T* dw = dfilter ? dfilter->Allocate<T>(filter.shape()) : nullptr;
    if (dx) std::fill(dx, dx + input.numel(), T(0));
    if (dw) std::fill(dw, dw + filter.numel(), T(0));
    if (dy == nullptr || (dx == nullptr && dw == nullptr)) return;
    T* col = l.direct ? nullptr : ColumnScratch<T>(l.geo.col_rows() * l.geo.col_cols());
    const int64_t m = l.out_channels_per_group;
    const int64_t k = l.geo.col_rows();
    const int64_t cols = l.geo.col_cols();
    for (int64_t n = 0; n < l.batch; ++n) {
      for (int64_t g = 0; g < l.groups; ++g) {
        const int64_t in_offset = (n * l.groups + g) * l.in_group_size;
        const T* dyg = dy + (n * l.groups + g) * l.out_group_size;
        const T* wg = w + g * l.filter_group_size;
        if (dw) {
          const T* xcol = x + in_offset;
          if (!l.direct) {
            Im2Col(x + in_offset, l.geo, col);
            xcol = col;
          }
          Gemm(false, true, m, k, cols, T(1), dyg, xcol, T(1), dw + g * l.filter_group_size);
        }
        if (dx) {
          if (l.direct) {
            Gemm(true, false, k, cols, m, T(1), wg, dyg, T(0), dx + in_offset);
          } else {
            Gemm(true, false, k, cols, m, T(1), wg, dyg, T(0), col);
            Col2Im(col, l.geo, dx + in_offset);
          }
        }
      }
    }
  });
}

// Declares the attributes conv2d and conv2d_grad share.
OpSchema WithConvAttrs(OpSchema schema) {
  schema.Attr("strides", std::vector<int64_t>{1, 1}, "window step (height, width)", PairAtLeast(1))
      .Attr("paddings", std::vector<int64_t>{0, 0}, "zeros added on each side (height, width)",
            PairAtLeast(0))
      .Attr("dilations", std::vector<int64_t>{1, 1}, "spacing of kernel taps (height, width)",
            PairAtLeast(1))
      .Attr("groups", 1, "channel groups: group g of Output sees only group g of Input",
            AtLeast(1));
  return schema;
}

}  // namespace

RILL_REGISTER_OP(
    conv2d,
    WithConvAttrs(OpSchema("conv2d")
                      .Doc("2-D convolution (cross-correlation) of NCHW images with strides, zero "
                           "padding, dilations and channel groups; im2col + GEMM.")
                      .Input("Input", "images [N, C, H, W]")
                      .Input("Filter", "kernels [M, C / groups, kh, kw]")
                      .Output("Output",
                              "[N, M, Ho, Wo] with Ho = (H + 2 * pad_h - dilation_h * "
                              "(kh - 1) - 1) / stride_h + 1, Wo likewise"))
        .InferShape(InferConv2dShape)
        .CpuKernel(Conv2dKernel)
        .DefaultGradPerInput());

RILL_REGISTER_OP(conv2d_grad,
                 WithConvAttrs(OpSchema("conv2d_grad")
                                   .Doc("Gradients of conv2d with respect to Input and Filter.")
                                   .Input("Input", "the forward Input")
                                   .Input("Filter", "the forward Filter")
                                   .Input("Output", "the forward Output (unused)", kOptional)
                                   .Input("Output@GRAD", "gradient of Output; absent means zero",
                                          kOptional)
                                   .Output("Input@GRAD", "gradient of Input", kOptional)
                                   .Output("Filter@GRAD", "gradient of Filter", kOptional))
                     .InferShape(InferConv2dGradShape)
                     .CpuKernel(Conv2dGradKernel));

}  // namespace rill
