// lookup_table: an embedding lookup, Out row i = W row Ids[i]; the padding_idx
// row reads as zeros and gets no gradient.
#include <algorithm>
#include <vector>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// Ids [..., 1] gives Out [..., D]; Ids [N] gives Out [N, D].
Shape LookupOutShape(const Shape& ids, int64_t width) {
  Shape out = ids;
  if (out.size() >= 2) {
    out.back() = width;
  } else {
    out.push_back(width);
  }
  return out;
}

void CheckTableAndIds(const Tensor& w, const Tensor& ids, int64_t padding_idx) {
  RILL_CHECK(w.rank() == 2, kInvalidArgument, "W must be [V, D], is ", w.Describe());
  RILL_CHECK(ids.rank() == 1 || (ids.rank() >= 2 && ids.dim(ids.rank() - 1) == 1), kInvalidArgument,
             "Ids must be [N, 1] or [N], is ", ids.Describe());
  RILL_CHECK(padding_idx < w.dim(0), kInvalidArgument, "padding_idx ", padding_idx,
             " is not a row of W ", ShapeToString(w.shape()));
}

void LookupTableKernel(KernelContext& ctx) {
  const Tensor& w = ctx.Input("W");
  const Tensor& ids = ctx.Input("Ids");
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  CheckTableAndIds(w, ids, padding_idx);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(w.dtype(), [&]<class T>() {
    const T* table = w.data<T>();
    const int64_t* id = ids.data<int64_t>();
    const int64_t rows = w.dim(0);
    const int64_t width = w.dim(1);
    const int64_t n = ids.numel();
    T* o = out->Allocate<T>(LookupOutShape(ids.shape(), width));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = id[i];
      T* dst = o + i * width;
      if (row == padding_idx && padding_idx >= 0) {
        std::fill_n(dst, width, T(0));
        continue;
      }
      RILL_CHECK(row >= 0 && row < rows, kInvalidArgument, "Ids row ", i, " is ", row,
                 ", outside the table's rows [0, ", rows, ")");
      std::copy_n(table + row * width, width, dst);
    }
  });
}

void LookupTableShape(ShapeContext& ctx) {
  const Shape& w = ctx.InputShape("W");
  const Shape& ids = ctx.InputShape("Ids");
  ctx.Check(w.size() == 2, "W must be [V, D], has shape ", ShapeToString(w));
  ctx.Check(ctx.InputType("Ids") == DataType::kInt64, "Ids must be int64, is ",
            DataTypeName(ctx.InputType("Ids")));
  ctx.Check(!ids.empty(), "Ids must be [N, 1] or [N], is a scalar");
  if (ids.size() >= 2) ctx.CheckDim(ids.back(), 1, "last dim of Ids (one id per row)");
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  ctx.Check(w[0] < 0 || padding_idx < w[0], "padding_idx ", padding_idx, " is not a row of W ",
            ShapeToString(w));
  ctx.SetOutput("Out", LookupOutShape(ids, w[1]), ctx.InputType("W"));
}

// With is_sparse, W@GRAD is selected rows: one row per id (repeats kept),
// holding that id's Out@GRAD row; the padding row is left out.
void SparseLookupTableGrad(KernelContext& ctx, const Tensor& w, const Tensor& ids,
                           int64_t padding_idx) {
  const int64_t width = w.dim(1);
  const int64_t n = ids.numel();
  const int64_t* id = ids.data<int64_t>();
  SelectedRows* dw = ctx.OutputRows("W@GRAD");
  dw->height = w.dim(0);
  dw->rows.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] == padding_idx && padding_idx >= 0) continue;
    RILL_CHECK(id[i] >= 0 && id[i] < w.dim(0), kInvalidArgument, "Ids row ", i, " is ", id[i],
               ", outside the table's rows [0, ", w.dim(0), ")");
    dw->rows.push_back(id[i]);
  }
  const bool has_dy = ctx.InputReady("Out@GRAD");
  VisitFloatType(w.dtype(), [&]<class T>() {
    const T* dy = has_dy ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    T* v = dw->value.Allocate<T>({static_cast<int64_t>(dw->rows.size()), width});
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (id[i] == padding_idx && padding_idx >= 0) continue;
      for (int64_t j = 0; j < width; ++j) v[k * width + j] = dy ? dy[i * width + j] : T(0);
      ++k;
    }
  });
}

// W@GRAD is dense: zeros, then each Out@GRAD row added into the row its id
// picked (ids may repeat). The padding row gets nothing. A missing Out@GRAD
// means zero.
void LookupTableGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("W@GRAD")) return;
  const Tensor& w = ctx.Input("W");
  const Tensor& ids = ctx.Input("Ids");
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  CheckTableAndIds(w, ids, padding_idx);
  const bool has_dy = ctx.InputReady("Out@GRAD");
  if (has_dy) {
    const Tensor& dy = ctx.Input("Out@GRAD");
    RILL_CHECK(dy.numel() == ids.numel() * w.dim(1), kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(dy.shape()), ", want ",
               ShapeToString(LookupOutShape(ids.shape(), w.dim(1))));
  }
  if (ctx.Attr<bool>("is_sparse")) {
    SparseLookupTableGrad(ctx, w, ids, padding_idx);
    return;
  }
  Tensor* dw = ctx.Output("W@GRAD");
  VisitFloatType(w.dtype(), [&]<class T>() {
    const int64_t rows = w.dim(0);
    const int64_t width = w.dim(1);
    const int64_t n = ids.numel();
    const int64_t* id = ids.data<int64_t>();
    const T* dy = nullptr;
    if (has_dy) {
      const Tensor& dy_t = ctx.Input("Out@GRAD");
      RILL_CHECK(dy_t.numel() == n * width, kInvalidArgument, "Out@GRAD has shape ",
                 ShapeToString(dy_t.shape()), ", want ",
                 ShapeToString(LookupOutShape(ids.shape(), width)));
      dy = dy_t.data<T>();
    }
    T* g = dw->Allocate<T>(w.shape());
    std::fill_n(g, rows * width, T(0));
    if (dy == nullptr) return;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = id[i];
      if (row == padding_idx && padding_idx >= 0) continue;
      RILL_CHECK(row >= 0 && row < rows, kInvalidArgument, "Ids row ", i, " is ", row,
                 ", outside the table's rows [0, ", rows, ")");
      T* dst = g + row * width;
      const T* src = dy + i * width;
      for (int64_t j = 0; j < width; ++j) dst[j] += src[j];
    }
  });
}

void LookupTableGradShape(ShapeContext& ctx) {
  const Shape& w = ctx.InputShape("W");
  ctx.Check(w.size() == 2, "W must be [V, D], has shape ", ShapeToString(w));
  if (ctx.HasInput("Out@GRAD")) {
    const Shape want = LookupOutShape(ctx.InputShape("Ids"), w[1]);
    ctx.Check(ShapesCompatible(want, ctx.InputShape("Out@GRAD")), "Out@GRAD has shape ",
              ShapeToString(ctx.InputShape("Out@GRAD")), ", want ", ShapeToString(want));
  }
  ctx.SetOutput("W@GRAD", w, ctx.InputType("W"));
}

std::vector<proto::OpDesc> LookupTableGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("lookup_table_grad");
  const std::string w = InputVar(fwd, "W");
  SetInput(&grad, "W", {w});
  SetInput(&grad, "Ids", {InputVar(fwd, "Ids")});
  SetInput(&grad, "Out@GRAD", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "W@GRAD", {GradVarName(w)});
  *grad.mutable_attrs() = fwd.attrs();
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(lookup_table,
                 OpSchema("lookup_table")
                     .Doc("Out row i = W row Ids[i] (zeros for padding_idx).")
                     .Input("W", "the table [V, D]")
                     .Input("Ids", "int64 row indices [N, 1] or [N]", kNoGradient)
                     .Output("Out", "the looked-up rows [N, D]")
                     .Attr("padding_idx", -1, "id whose row reads as zeros; -1: none", AtLeast(-1))
                     .Attr("is_sparse", false,
                           "the gradient of W is selected rows (only the looked-up rows)")
                     .InferShape(LookupTableShape)
                     .CpuKernel(LookupTableKernel)
                     .Grad(LookupTableGrad));

RILL_REGISTER_OP(lookup_table_grad,
                 OpSchema("lookup_table_grad")
                     .Doc("W@GRAD: Out@GRAD rows added into the rows of W that Ids picked.")
                     .Input("W", "the forward table (for its shape and type)")
                     .Input("Ids", "the forward ids", kNoGradient)
                     .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
                     .Output("W@GRAD", "gradient of W: dense, or selected rows with is_sparse",
                             kOptional)
                     .Attr("padding_idx", -1, "id whose row gets no gradient; -1: none",
                           AtLeast(-1))
                     .Attr("is_sparse", false, "W@GRAD as selected rows")
                     .SparseOutput("W@GRAD", "is_sparse")
                     .InferShape(LookupTableGradShape)
                     .CpuKernel(LookupTableGradKernel));

}  // namespace rill
