// top_k: the k largest values of each row (the last dim) of X, in descending
// order, and their indices. Equal values keep their order in X.
#include <algorithm>
#include <numeric>
#include <vector>

#include "ops/tensor/top_k_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void TopKShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const int k = ctx.Attr<int>("k");
  ctx.Check(!x.empty(), "X must have rank >= 1");
  ctx.Check(k >= 1, "k must be >= 1, is ", k);
  ctx.Check(x.back() < 0 || k <= x.back(), "k (", k, ") exceeds the last dim of X ",
            ShapeToString(x));
  Shape out = x;
  out.back() = k;
  ctx.SetOutput("Out", out, ctx.InputType("X"));
  ctx.SetOutput("Indices", out, DataType::kInt64);
}

template <class T>
void TopKRow(const T* x, int64_t c, int64_t k, T* values, int64_t* indices,
             std::vector<int64_t>* scratch) {
  if (k <= kTopKInsertionMaxK) {
    int64_t count = 0;
    for (int64_t j = 0; j < c; ++j) {
      const T v = x[j];
      if (count == k && !(v > values[k - 1])) continue;
      // Shift smaller values down; equal ones stay ahead (earlier index wins).
      int64_t pos = count < k ? count++ : k - 1;
      while (pos > 0 && v > values[pos - 1]) {
        values[pos] = values[pos - 1];
        indices[pos] = indices[pos - 1];
        --pos;
      }
      values[pos] = v;
      indices[pos] = j;
    }
    return;
  }
  scratch->resize(static_cast<size_t>(c));
  std::iota(scratch->begin(), scratch->end(), int64_t{0});
  std::partial_sort(scratch->begin(), scratch->begin() + k, scratch->end(),
                    [x](int64_t a, int64_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
  for (int64_t j = 0; j < k; ++j) {
    indices[j] = (*scratch)[static_cast<size_t>(j)];
    values[j] = x[indices[j]];
  }
}

void TopKKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const TopKDims dims = TopKForwardDims(x, ctx.Attr<int>("k"));
  const int64_t c = dims.cols;
  const int64_t k = dims.k;
  Tensor* out = ctx.Output("Out");
  Tensor* indices = ctx.Output("Indices");
  VisitDataType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    T* values = out->Allocate<T>(dims.out_shape);
    int64_t* idx = indices->Allocate<int64_t>(dims.out_shape);
    std::vector<int64_t> scratch;
    for (int64_t r = 0; r < dims.rows; ++r) {
      TopKRow(in + r * c, c, k, values + r * k, idx + r * k, &scratch);
    }
  });
}

// X@GRAD is zero except at the picked positions, which get Out@GRAD.
void TopKGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const TopKGradArgs a = ReadTopKGradArgs(ctx);
  VisitFloatType(a.dtype, [&]<class T>() {
    const T* dout = a.dout != nullptr ? a.dout->data<T>() : nullptr;
    T* d = a.dx->Allocate<T>(a.shape);
    std::fill(d, d + a.dx->numel(), T(0));
    if (dout == nullptr) return;
    for (int64_t r = 0; r < a.rows; ++r) {
      for (int64_t j = 0; j < a.k; ++j) {
        const int64_t i = a.idx[r * a.k + j];
        CheckTopKIndex(i, r, a.cols);
        d[r * a.cols + i] += dout[r * a.k + j];
      }
    }
  });
}

void TopKGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

std::vector<proto::OpDesc> TopKGrad(const proto::OpDesc& fwd) {
  proto::OpDesc grad;
  grad.set_type("top_k_grad");
  const std::string x = InputVar(fwd, "X");
  SetInput(&grad, "X", {x});
  SetInput(&grad, "Indices", {OutputVar(fwd, "Indices")});
  SetInput(&grad, GradVarName("Out"), {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, GradVarName("X"), {GradVarName(x)});
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(top_k,
                 OpSchema("top_k")
                     .Doc("The k largest values of each row (last dim) of X, descending, "
                          "and their indices.")
                     .Input("X", "input tensor [..., C]")
                     .Output("Out", "the k largest values [..., k]")
                     .Output("Indices", "their int64 positions in the row [..., k]", kNoGradient)
                     .Attr("k", 1, "how many values per row", AtLeast(1))
                     .InferShape(TopKShape)
                     .CpuKernel(TopKKernel)
                     .Grad(TopKGrad));

RILL_REGISTER_OP(
    top_k_grad, OpSchema("top_k_grad")
                    .Doc("X@GRAD = Out@GRAD scattered to the positions in Indices, zero elsewhere.")
                    .Input("X", "the forward input (for its shape)", kNoGradient)
                    .Input("Indices", "the forward indices", kNoGradient)
                    .Input("Out@GRAD", "gradient of Out", kOptional)
                    .Output("X@GRAD", "gradient of X", kOptional)
                    .InferShape(TopKGradShape)
                    .CpuKernel(TopKGradKernel));

}  // namespace rill
