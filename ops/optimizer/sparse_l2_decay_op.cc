// sparse_l2_decay: L2 regularisation of a sparse gradient (selected rows, from
// an embedding looked up with is_sparse). GradOut holds Grad's rows merged
// (each row once, repeats summed) with coeff * Param[row] added to each:
// only the rows the step touched decay, as in Fluid, whose regulariser looks
// the touched rows up (extract_rows + lookup_table) and sums their scaled
// values in. Fluid adds the decay once per occurrence of a row; this op adds
// it once per row, so that each touched row gets exactly the dense
// gradient + coeff * Param of that row. GradOut may be Grad.
//
// coeff is widened to double through its decimal form (DecimalDouble), as
// the optimizer ops and fill_constant widen theirs, so a touched row gets the
// bits of the dense form (Param times a fill_constant of coeff, summed in).
#include "ops/optimizer/optimizer_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void SparseL2DecayShape(ShapeContext& ctx) {
  const DataType t = ctx.InputType("Param");
  ctx.Check(t == DataType::kFloat32 || t == DataType::kFloat64,
            "Param must be float32 or float64, is ", DataTypeName(t));
  const Shape& param = ctx.InputShape("Param");
  const Shape& grad = ctx.InputShape("Grad");
  ctx.Check(ShapesCompatible(grad, param), "Grad ", ShapeToString(grad), " differs from Param ",
            ShapeToString(param));
  ctx.Check(ctx.InputType("Grad") == t, "Grad is ", DataTypeName(ctx.InputType("Grad")),
            " but Param is ", DataTypeName(t));
  ctx.SetOutput("GradOut", param, t);
}

void SparseL2DecayKernel(KernelContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  RILL_CHECK(ctx.InputIsSelectedRows("Grad"), kInvalidArgument, "Grad (", ctx.InputName("Grad"),
             ") must hold selected rows (a sparse gradient); a dense gradient decays with "
             "scale and sum");
  // A new buffer (Merged copies), never Grad's: an allreduce hands every
  // place the same merged rows.
  SelectedRows merged = SparseGrad(ctx, param);  // checked against Param
  const double coeff = DecimalDouble(ctx.Attr<float>("coeff"));
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T c = static_cast<T>(coeff);
    const T* p = param.data<T>();
    T* g = merged.value.mutable_data<T>();
    const int64_t width = param.dim(0) == 0 ? 0 : param.numel() / param.dim(0);
    for (size_t i = 0; i < merged.rows.size(); ++i) {
      const T* row = p + merged.rows[i] * width;
      T* out = g + static_cast<int64_t>(i) * width;
      for (int64_t j = 0; j < width; ++j) out[j] = out[j] + row[j] * c;
    }
  });
  *ctx.OutputRows("GradOut") = std::move(merged);
}

}  // namespace

RILL_REGISTER_OP(sparse_l2_decay,
                 OpSchema("sparse_l2_decay")
                     .Doc("GradOut = Grad's rows merged, each plus coeff * Param[row] "
                          "(L2 decay of the rows a sparse gradient touches).")
                     .Input("Param", "the parameter [height, ...]")
                     .Input("Grad", "its gradient as selected rows (may repeat rows)")
                     .Output("GradOut", "selected rows, each row once (usually Grad itself)")
                     .Attr("coeff", 0.0f, "the L2 coefficient")
                     .InferShape(SparseL2DecayShape)
                     .CpuKernel(SparseL2DecayKernel));

}  // namespace rill
