#include "ops/tensor/top_k_util.h"

namespace rill {

TopKDims TopKForwardDims(const Tensor& x, int64_t k) {
  RILL_CHECK(x.rank() >= 1, kInvalidArgument, "X must have rank >= 1, is ", x.Describe());
  const int64_t c = x.dim(x.rank() - 1);
  RILL_CHECK(k >= 1 && k <= c, kInvalidArgument, "k (", k, ") must be in [1, ", c,
             "], the last dim of X ", x.Describe());
  Shape shape = x.shape();
  shape.back() = k;
  return {shape, c == 0 ? 0 : x.numel() / c, c, k};
}

TopKGradArgs ReadTopKGradArgs(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& indices = ctx.Input("Indices");
  const Shape shape = x.shape();
  const int64_t c = shape.empty() ? 1 : shape.back();
  const int64_t k = indices.rank() == 0 ? 1 : indices.dim(indices.rank() - 1);
  const int64_t rows = c == 0 ? 0 : x.numel() / c;
  RILL_CHECK(indices.numel() == rows * k, kInvalidArgument, "Indices ", indices.Describe(),
             " does not match X ", x.Describe());
  Tensor* dx = ctx.Output("X@GRAD");
  // X must be float32 or float64: VisitFloatType's error, before Indices' type
  // and Out@GRAD are checked, as in the kernels' type dispatch.
  VisitFloatType(x.dtype(), []<class T>() {});
  const int64_t* idx = indices.data<int64_t>();
  const Tensor* dout = nullptr;
  if (ctx.InputReady("Out@GRAD")) {
    dout = &ctx.Input("Out@GRAD");
    RILL_CHECK(dout->numel() == rows * k, kInvalidArgument, "Out@GRAD ", dout->Describe(),
               " does not match Indices ", indices.Describe());
  }
  return {x.dtype(), shape, rows, c, k, indices, idx, dout, dx};
}

void CheckTopKIndex(int64_t index, int64_t row, int64_t cols) {
  RILL_CHECK(index >= 0 && index < cols, kOutOfRange, "index ", index, " in row ", row,
             " is outside [0, ", cols, ")");
}

}  // namespace rill
