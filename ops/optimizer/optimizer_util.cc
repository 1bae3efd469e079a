#include "ops/optimizer/optimizer_util.h"

#include <charconv>

namespace rill {

double DecimalDouble(float f) {
  char text[32];
  const auto printed = std::to_chars(text, text + sizeof(text), f);
  double d = static_cast<double>(f);
  if (printed.ec == std::errc()) std::from_chars(text, printed.ptr, d);
  return d;
}

double ReadScalar(const Tensor& t, const char* slot) {
  RILL_CHECK(t.numel() == 1, kInvalidArgument, slot, " must hold one element, is ", t.Describe());
  if (t.dtype() == DataType::kFloat32) return DecimalDouble(t.data<float>()[0]);
  RILL_CHECK(t.dtype() == DataType::kFloat64, kInvalidArgument, slot,
             " must be float32 or float64, is ", t.Describe());
  return t.data<double>()[0];
}

SelectedRows SparseGrad(const KernelContext& ctx, const Tensor& param) {
  SelectedRows grad = ctx.InputRows("Grad").Merged();
  RILL_CHECK(param.rank() >= 1 && grad.height == param.dim(0) &&
                 grad.value.dtype() == param.dtype() &&
                 grad.value.numel() == static_cast<int64_t>(grad.rows.size()) *
                                           (param.dim(0) == 0 ? 0 : param.numel() / param.dim(0)),
             kInvalidArgument, "sparse Grad (", grad.rows.size(), " rows of ",
             grad.value.Describe(), ", height ", grad.height, ") does not match Param ",
             param.Describe());
  return grad;
}

}  // namespace rill
