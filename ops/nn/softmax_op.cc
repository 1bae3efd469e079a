// softmax: Out = exp(X) / sum(exp(X)) along `axis` (default the last),
// computed from X - max(X) per row so large inputs do not overflow. With a
// Mask (broadcast to X, 0 = masked), masked elements take no part and get 0;
// a row masked everywhere is all zeros. The gradient needs only Out: a masked
// element's Out is 0, so its gradient is 0 too. exp is vector_math.h's.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/math/vector_math.h"
#include "ops/nn/softmax_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/parallel_for.h"

namespace rill {
namespace {

// The last axis unmasked: rows of cols contiguous elements.
template <class T>
void SoftmaxLastAxis(const T* in, T* o, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) SoftmaxOfRow(in + r * cols, o + r * cols, cols);
}

// One row of len elements `stride` apart; mr (null: nothing masked) holds the
// row's mask values `mask_stride` apart. The same operations in the same order
// as SoftmaxLastAxis, over the kept elements only (their exponents gathered
// into `scratch`, len values, so that each goes through VectorExp where it
// would in a last-axis row). yr may be xr.
template <class T>
void SoftmaxRow(const T* xr, T* yr, int64_t len, int64_t stride, const T* mr, int64_t mask_stride,
                T* scratch) {
  const auto kept = [&](int64_t j) { return mr == nullptr || mr[j * mask_stride] != T(0); };
  int64_t first = 0;
  while (first < len && !kept(first)) ++first;
  if (first == len) {  // masked everywhere
    for (int64_t j = 0; j < len; ++j) yr[j * stride] = T(0);
    return;
  }
  T max = xr[first * stride];
  for (int64_t j = first + 1; j < len; ++j) {
    if (kept(j)) max = std::max(max, xr[j * stride]);
  }
  int64_t count = 0;
  for (int64_t j = 0; j < len; ++j) {
    if (kept(j)) scratch[count++] = xr[j * stride] - max;
  }
  VectorExp(scratch, scratch, count);
  T sum = 0;
  for (int64_t j = 0, k = 0; j < len; ++j) {
    if (kept(j)) {
      yr[j * stride] = scratch[k++];
      sum += yr[j * stride];
    } else {
      yr[j * stride] = T(0);
    }
  }
  const T inv = T(1) / sum;
  for (int64_t j = 0; j < len; ++j) yr[j * stride] *= inv;
}

void SoftmaxKernel(KernelContext& ctx) {
  const Tensor& x = SoftmaxInput(ctx);
  const int axis = SoftmaxAxis(ctx, x.rank());
  const bool masked = ctx.HasInput("Mask");
  const Tensor* mask = masked ? &ctx.Input("Mask") : nullptr;
  const SoftmaxMaskIndex mask_index = masked ? ReadSoftmaxMask(*mask, x, axis) : SoftmaxMaskIndex();
  const SoftmaxRows rows = MakeSoftmaxRows(x.shape(), axis);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const T* m = masked ? mask->data<T>() : nullptr;
    T* o = out->Allocate<T>(x.shape());
    if (rows.len == 0) return;
    const int64_t min_rows = std::max<int64_t>(1, kMinValuesPerPart / rows.len);
    if (!masked && rows.inner == 1) {
      ParallelRanges(rows.outer, min_rows, 1, [&](int64_t b, int64_t e) {
        SoftmaxLastAxis(in + b * rows.len, o + b * rows.len, e - b, rows.len);
      });
      return;
    }
    ParallelRanges(rows.count(), min_rows, 1, [&](int64_t b, int64_t e) {
      std::vector<T> scratch(static_cast<size_t>(rows.len));
      for (int64_t r = b; r < e; ++r) {
        const int64_t start = rows.Start(r);
        const T* mr = masked ? m + mask_index.Offset(start) : nullptr;
        SoftmaxRow(in + start, o + start, rows.len, rows.inner, mr, mask_index.axis_stride,
                   scratch.data());
      }
    });
  });
}

void SoftmaxShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  ctx.Check(!x.empty(), "softmax needs X of rank >= 1, got a scalar");
  const int64_t rank = static_cast<int64_t>(x.size());
  const std::string axis_error = SoftmaxAxisError(ctx.Attr<int>("axis"), rank);
  ctx.Check(axis_error.empty(), "softmax: ", axis_error, " (X has shape ", ShapeToString(x), ")");
  if (ctx.HasInput("Mask")) {
    const std::string mask_error = SoftmaxMaskShapeError(ctx.InputShape("Mask"), x);
    ctx.Check(mask_error.empty(), "softmax: ", mask_error);
    ctx.Check(ctx.InputType("Mask") == ctx.InputType("X"), "softmax: Mask is ",
              DataTypeName(ctx.InputType("Mask")), " but X is ", DataTypeName(ctx.InputType("X")),
              ": want X's type");
  }
  ctx.SetOutput("Out", x, ctx.InputType("X"));
}

// One row of len elements `stride` apart (inlined, so a literal stride of 1
// gives contiguous loops).
template <class T>
inline void SoftmaxGradRow(const T* yr, const T* dyr, T* gr, int64_t len, int64_t stride) {
  T dot = 0;
  for (int64_t j = 0; j < len; ++j) dot += dyr[j * stride] * yr[j * stride];
  for (int64_t j = 0; j < len; ++j) gr[j * stride] = (dyr[j * stride] - dot) * yr[j * stride];
}

// Per row along the axis: X@GRAD = (Out@GRAD - sum(Out@GRAD * Out)) * Out.
// A missing Out@GRAD means zero.
void SoftmaxGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = SoftmaxGradInput(ctx);
  const int axis = SoftmaxAxis(ctx, y.rank());
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(y.dtype(), [&]<class T>() {
    const T* out = y.data<T>();
    const int64_t n = y.numel();
    if (!has_dy) {
      T* g = dx->Allocate<T>(y.shape());
      for (int64_t i = 0; i < n; ++i) g[i] = T(0);
      return;
    }
    const T* dy = SoftmaxOutGrad<T>(ctx, y);
    const SoftmaxRows rows = MakeSoftmaxRows(y.shape(), axis);
    const int64_t len = rows.len;
    const int64_t stride = rows.inner;
    T* g = dx->Allocate<T>(y.shape());
    if (len == 0) return;
    const int64_t min_rows = std::max<int64_t>(1, kMinValuesPerPart / len);
    ParallelRanges(rows.count(), min_rows, 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        if (stride == 1) {  // the last axis: contiguous rows
          SoftmaxGradRow(out + r * len, dy + r * len, g + r * len, len, 1);
        } else {
          const int64_t start = rows.Start(r);
          SoftmaxGradRow(out + start, dy + start, g + start, len, stride);
        }
      }
    });
  });
}

void SoftmaxGradShape(ShapeContext& ctx) {
  const Shape& out = ctx.InputShape("Out");
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(out, ctx.InputShape("Out@GRAD")), "Out@GRAD shape ",
              ShapeToString(ctx.InputShape("Out@GRAD")), " differs from Out shape ",
              ShapeToString(out));
  }
  ctx.SetOutput("X@GRAD", out, ctx.InputType("Out"));
}

// The gradient needs only Out (masked elements have Out 0), so neither X nor
// Mask need be kept for the backward pass.
std::vector<proto::OpDesc> SoftmaxGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("softmax_grad");
  *grad.mutable_attrs() = fwd.attrs();
  const std::string out = OutputVar(fwd, "Out");
  SetInput(&grad, "Out", {out});
  SetInput(&grad, "Out@GRAD", {GradVarName(out)});
  SetOutput(&grad, "X@GRAD", {GradVarName(InputVar(fwd, "X"))});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(softmax, OpSchema("softmax")
                              .Doc("Out = exp(X) / sum(exp(X)) along axis, masked elements "
                                   "excluded (Out 0; a row masked everywhere: all 0).")
                              .Input("X", "input tensor, rank >= 1")
                              .Input("Mask",
                                     "X's type, broadcasting to X (its dims aligned to X's "
                                     "last ones, each 1 or X's); 0 masks the element",
                                     kOptional | kNoGradient)
                              .Output("Out", "probabilities, same shape and type as X")
                              .Attr("axis", -1,
                                    "the axis normalised over; negative counts "
                                    "from the end")
                              .InferShape(SoftmaxShape)
                              .CpuKernel(SoftmaxKernel)
                              .Grad(SoftmaxGrad));

RILL_REGISTER_OP(softmax_grad,
                 OpSchema("softmax_grad")
                     .Doc("X@GRAD = (Out@GRAD - sum(Out@GRAD * Out, along axis)) * Out.")
                     .Input("Out", "the forward output")
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Attr("axis", -1, "softmax's axis")
                     .InferShape(SoftmaxGradShape)
                     .CpuKernel(SoftmaxGradKernel));

}  // namespace rill
