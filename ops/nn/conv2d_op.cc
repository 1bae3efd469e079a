// conv2d: 2-D convolution (cross-correlation) of NCHW images by im2col + GEMM
// (3x3 and 5x5 at stride 1: Winograd, winograd.h), and its gradient.
#include <algorithm>

#include "ops/math/blas.h"
#include "ops/nn/conv_pool_geometry.h"
#include "ops/nn/im2col.h"
#include "ops/nn/thread_scratch.h"
#include "ops/nn/winograd.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/parallel_for.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void InferConv2dShape(ShapeContext& ctx) {
  const ConvParams p = ReadConvParams(ctx);
  const Shape out =
      ConvOutputShape(MakeConvGeometry(ctx.InputShape("Input"), ctx.InputShape("Filter"), p));
  const DataType dtype = ctx.InputType("Input");
  ctx.Check(ctx.InputType("Filter") == dtype, "conv2d: Filter is ",
            DataTypeName(ctx.InputType("Filter")), " but Input is ", DataTypeName(dtype));
  ctx.SetOutput("Output", out, dtype);
}

void InferConv2dGradShape(ShapeContext& ctx) {
  const ConvParams p = ReadConvParams(ctx);
  const Shape& input = ctx.InputShape("Input");
  const Shape& filter = ctx.InputShape("Filter");
  const Shape out = ConvOutputShape(MakeConvGeometry(input, filter, p));
  if (ctx.HasInput("Output@GRAD")) {
    const Shape& dout = ctx.InputShape("Output@GRAD");
    ctx.Check(ShapesCompatible(dout, out), "conv2d_grad: Output@GRAD is ", ShapeToString(dout),
              " but the output is ", ShapeToString(out));
  }
  ctx.SetOutput("Input@GRAD", input, ctx.InputType("Input"));
  ctx.SetOutput("Filter@GRAD", filter, ctx.InputType("Filter"));
}

// Elements of one channel group: of an input image, of an output image and
// of the filters (the GEMMs' operands).
struct GroupSizes {
  int64_t out_channels;  // rows of the GEMM
  int64_t input;
  int64_t output;
  int64_t filter;
};

GroupSizes GroupSizesOf(const ConvGeometry& g) {
  const int64_t out_channels = g.out_channels / g.groups;
  return {out_channels, g.channels / g.groups * g.height * g.width, out_channels * g.col_cols(),
          out_channels * g.col_rows()};
}

// Tags of this file's ThreadScratch buffers.
struct ColumnsTag;
struct WinogradFiltersTag;
struct FilterGradPartsTag;

// Images per ParallelFor part: about half a million multiply-adds of GEMM.
int64_t ImagesPerPart(const ConvGeometry& geo) {
  const int64_t per_image =
      std::max<int64_t>(1, geo.out_channels * geo.col_rows() * geo.col_cols());
  return std::max<int64_t>(1, (int64_t{1} << 19) / per_image);
}

// How conv2d_grad splits Filter@GRAD over runs of images: `count` parts
// (none without a Filter@GRAD; at most kMaxFilterGradParts, winograd.h), each
// summing `values` values of its own (the filters' count, or Winograd's
// transformed filters). The split depends on the sizes only.
struct FilterGradParts {
  WinogradShape winograd;  // where Winograd applies
  int64_t count = 0;
  int64_t values = 0;
  FilterGradParts(const ConvGeometry& geo, int64_t filter_values, bool wanted) {
    if (!wanted) return;
    if (WinogradApplies(geo)) {
      winograd = WinogradForward(geo);
      count = WinogradFilterGradParts(winograd, geo.batch);
      values = WinogradFilterGradPartValues(winograd);
    } else {
      count = std::min(PartsOf(geo.batch, ImagesPerPart(geo)), kMaxFilterGradParts);
      values = filter_values;
    }
  }
};

// The filters transformed for WinogradConvolve, in the calling thread's
// scratch (ParallelFor's other threads read it until the loop returns).
template <class T>
const T* TransformedFilters(const T* w, const WinogradShape& s, bool turned) {
  T* u = ThreadScratch<T, WinogradFiltersTag>(s.planes() * s.out_channels * s.channels);
  WinogradFilters(w, s, turned, u);
  return u;
}

// Winograd's chunks of images, which are ParallelFor's parts: the same
// chunks however many threads help, so the same bits.
struct ImageChunks {
  int64_t images;
  int64_t chunk;
  ImageChunks(int64_t n, const WinogradShape& s) : images(n), chunk(s.images_per_chunk()) {}
  int64_t count() const { return (images + chunk - 1) / chunk; }
  int64_t begin(int64_t part) const { return part * chunk; }
  int64_t end(int64_t part) const { return std::min(images, (part + 1) * chunk); }
};

// Each image is convolved on its own (its im2col in the thread's scratch, its
// GEMM into its own output), so parts of images give the same bits. 3x3 and
// 5x5 stride-1 convolutions take Winograd's path instead (winograd.h).
void Conv2dKernel(KernelContext& ctx) {
  const ConvRun run = CheckConvKernel(ctx, false);
  const ConvGeometry& geo = run.geo;
  const Tensor& input = *run.input;
  const Tensor& filter = *run.filter;
  const GroupSizes z = GroupSizesOf(geo);
  Tensor* output = ctx.Output("Output");
  VisitFloatType(input.dtype(), [&]<class T>() {
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    T* y = output->Allocate<T>(ConvOutputShape(geo));
    if (WinogradApplies(geo)) {
      const WinogradShape s = WinogradForward(geo);
      const T* u = TransformedFilters(w, s, false);
      const ImageChunks chunks(geo.batch, s);
      ParallelFor(chunks.count(), [&](int64_t part) {
        const int64_t begin = chunks.begin(part);
        WinogradConvolve(x + begin * z.input, u, s, chunks.end(part) - begin, y + begin * z.output);
      });
      return;
    }
    ParallelRanges(geo.batch, ImagesPerPart(geo), 1, [&](int64_t begin, int64_t end) {
      T* col =
          geo.direct() ? nullptr : ThreadScratch<T, ColumnsTag>(geo.col_rows() * geo.col_cols());
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t g = 0; g < geo.groups; ++g) {
          const T* xg = x + (n * geo.groups + g) * z.input;
          const T* cols = xg;
          if (!geo.direct()) {
            Im2Col(xg, geo, col);
            cols = col;
          }
          Gemm(false, false, z.out_channels, geo.col_cols(), geo.col_rows(), T(1), w + g * z.filter,
               cols, T(0), y + (n * geo.groups + g) * z.output);
        }
      }
    });
  });
}

// Filter@GRAD = sum over images of dOut * col^T; Input@GRAD = col2im(Filter^T * dOut).
// ParallelFor's first parts sum Filter@GRAD over runs of images, each into
// values of its own, which are added in order afterwards (the runs depend on
// the sizes only: the same bits on any number of threads); the other parts
// are runs of images' Input@GRAD, each image's on its own. Where Winograd
// applies, it computes both: Filter@GRAD in the transformed domain, Input@GRAD
// as a convolution of dOut.
void Conv2dGradKernel(KernelContext& ctx) {
  const ConvRun run = CheckConvKernel(ctx, true);
  const ConvGeometry& geo = run.geo;
  const Tensor& input = *run.input;
  const Tensor& filter = *run.filter;
  const GroupSizes z = GroupSizesOf(geo);
  Tensor* dinput = ctx.HasOutput("Input@GRAD") ? ctx.Output("Input@GRAD") : nullptr;
  Tensor* dfilter = ctx.HasOutput("Filter@GRAD") ? ctx.Output("Filter@GRAD") : nullptr;
  VisitFloatType(input.dtype(), [&]<class T>() {
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    const T* dy = run.dout ? run.dout->data<T>() : nullptr;
    T* dx = dinput ? dinput->Allocate<T>(input.shape()) : nullptr;
    T* dw = dfilter ? dfilter->Allocate<T>(filter.shape()) : nullptr;
    const bool winograd = WinogradApplies(geo);
    // Winograd's Input@GRAD writes every value; col2im adds into zeros.
    const bool winograd_dx = dx && dy && winograd;
    if (dx && !winograd_dx) std::fill(dx, dx + input.numel(), T(0));
    if (dy == nullptr) {
      if (dw) std::fill(dw, dw + filter.numel(), T(0));
      return;
    }
    if (dx == nullptr && dw == nullptr) return;
    const int64_t m = z.out_channels;
    const int64_t k = geo.col_rows();
    const int64_t cols = geo.col_cols();
    // Filter@GRAD in parts, each the sum over a run of images into values of
    // its own, added in order after the loop (FilterGradParts).
    const FilterGradParts dw_parts(geo, filter.numel(), dw != nullptr);
    T* dw_sums = ThreadScratch<T, FilterGradPartsTag>(dw_parts.count * dw_parts.values);
    const auto filter_grad = [&](int64_t part) {
      T* sum = dw_sums + part * dw_parts.values;
      if (winograd) return WinogradFilterGradPart(x, dy, dw_parts.winograd, geo.batch, part, sum);
      std::fill(sum, sum + dw_parts.values, T(0));
      T* col = geo.direct() ? nullptr : ThreadScratch<T, ColumnsTag>(k * cols);
      const int64_t end = PartBegin(geo.batch, dw_parts.count, part + 1);
      for (int64_t n = PartBegin(geo.batch, dw_parts.count, part); n < end; ++n) {
        for (int64_t g = 0; g < geo.groups; ++g) {
          const int64_t in_offset = (n * geo.groups + g) * z.input;
          const T* xcol = x + in_offset;
          if (!geo.direct()) {
            Im2Col(x + in_offset, geo, col);
            xcol = col;
          }
          Gemm(false, true, m, k, cols, T(1), dy + (n * geo.groups + g) * z.output, xcol, T(1),
               sum + g * z.filter);
        }
      }
    };
    // The parts added into the first in order, then written to Filter@GRAD.
    const auto sum_filter_grad = [&] {
      if (dw == nullptr) return;
      for (int64_t p = 1; p < dw_parts.count; ++p) {
        const T* sum = dw_sums + p * dw_parts.values;
        for (int64_t i = 0; i < dw_parts.values; ++i) dw_sums[i] += sum[i];
      }
      if (winograd) return WinogradFilterGradFromSum(dw_sums, dw_parts.winograd, dw);
      std::copy(dw_sums, dw_sums + dw_parts.values, dw);
    };
    const auto input_grad = [&](int64_t begin, int64_t end) {
      T* col = geo.direct() ? nullptr : ThreadScratch<T, ColumnsTag>(k * cols);
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t g = 0; g < geo.groups; ++g) {
          const int64_t in_offset = (n * geo.groups + g) * z.input;
          const T* dyg = dy + (n * geo.groups + g) * z.output;
          const T* wg = w + g * z.filter;
          if (geo.direct()) {
            Gemm(true, false, k, cols, m, T(1), wg, dyg, T(0), dx + in_offset);
          } else {
            Gemm(true, false, k, cols, m, T(1), wg, dyg, T(0), col);
            Col2Im(col, geo, dx + in_offset);
          }
        }
      }
    };
    const int64_t first = dw_parts.count;
    if (winograd_dx) {
      const WinogradShape s = WinogradInputGrad(geo);
      const T* u = TransformedFilters(w, s, true);
      const ImageChunks chunks(geo.batch, s);
      ParallelFor(first + chunks.count(), [&](int64_t part) {
        if (part < first) return filter_grad(part);
        const int64_t begin = chunks.begin(part - first);
        WinogradConvolve(dy + begin * z.output, u, s, chunks.end(part - first) - begin,
                         dx + begin * z.input);
      });
    } else {
      const int64_t dx_parts = dx ? PartsOf(geo.batch, ImagesPerPart(geo)) : 0;
      ParallelFor(first + dx_parts, [&](int64_t part) {
        if (part < first) return filter_grad(part);
        const int64_t p = part - first;
        input_grad(PartBegin(geo.batch, dx_parts, p), PartBegin(geo.batch, dx_parts, p + 1));
      });
    }
    sum_filter_grad();
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
                           "padding, dilations and channel groups; im2col + GEMM (3x3 and 5x5 at "
                           "stride 1 with 8 channels or more: Winograd F(2x2, 3x3) and F(2x2, "
                           "5x5)).")
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
