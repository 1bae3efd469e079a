// lookup_table: an embedding lookup, Out row i = W row Ids[i]; the padding_idx
// row reads as zeros and gets no gradient.
#include <algorithm>
#include <vector>

#include "ops/nn/lookup_table_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void LookupTableKernel(KernelContext& ctx) {
  const LookupArgs args = ReadLookupArgs(ctx);
  const Tensor& w = args.w;
  const Tensor& ids = args.ids;
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
      if (IsPaddingId(row, args.padding_idx)) {
        std::fill_n(dst, width, T(0));
        continue;
      }
      CheckId(i, row, rows);
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
// holding that id's Out@GRAD row (zeros without `dy`); the padding row is
// left out.
void SparseLookupTableGrad(KernelContext& ctx, const LookupArgs& args, const Tensor* dy_t) {
  const Tensor& w = args.w;
  const int64_t width = w.dim(1);
  const int64_t* id = args.ids.data<int64_t>();
  SelectedRows* dw = ctx.OutputRows("W@GRAD");
  const std::vector<int64_t> positions = SetLookedUpRows(id, args, dw);
  VisitFloatType(w.dtype(), [&]<class T>() {
    const T* dy = dy_t != nullptr ? dy_t->data<T>() : nullptr;
    T* v = dw->value.Allocate<T>({static_cast<int64_t>(positions.size()), width});
    for (size_t k = 0; k < positions.size(); ++k) {
      const int64_t i = positions[k];
      for (int64_t j = 0; j < width; ++j) {
        v[static_cast<int64_t>(k) * width + j] = dy ? dy[i * width + j] : T(0);
      }
    }
  });
}

// W@GRAD is dense: zeros, then each Out@GRAD row added into the row its id
// picked (ids may repeat). The padding row gets nothing. A missing Out@GRAD
// means zero.
void DenseLookupTableGrad(KernelContext& ctx, const LookupArgs& args, const Tensor* dy_t) {
  const Tensor& w = args.w;
  const Tensor& ids = args.ids;
  Tensor* dw = ctx.Output("W@GRAD");
  VisitFloatType(w.dtype(), [&]<class T>() {
    const int64_t rows = w.dim(0);
    const int64_t width = w.dim(1);
    const int64_t n = ids.numel();
    const int64_t* id = ids.data<int64_t>();
    const T* dy = dy_t != nullptr ? dy_t->data<T>() : nullptr;
    T* g = dw->Allocate<T>(w.shape());
    std::fill_n(g, rows * width, T(0));
    if (dy == nullptr) return;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = id[i];
      if (IsPaddingId(row, args.padding_idx)) continue;
      CheckId(i, row, rows);
      T* dst = g + row * width;
      const T* src = dy + i * width;
      for (int64_t j = 0; j < width; ++j) dst[j] += src[j];
    }
  });
}

void LookupTableGradKernel(KernelContext& ctx) {
  RunLookupTableGrad(ctx, SparseLookupTableGrad, DenseLookupTableGrad);
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
