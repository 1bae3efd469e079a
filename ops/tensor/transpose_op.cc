// transpose: Out = X with its dims permuted: Out.dims[i] = X.dims[axis[i]].
#include <cstring>
#include <vector>

#include "ops/tensor/shape_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void TransposeShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const std::vector<int64_t> perm = ctx.Attr<std::vector<int64_t>>("axis");
  CheckPermutation(perm, x.size());
  Shape out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[static_cast<size_t>(perm[i])];
  ctx.Check(OutputVar(ctx.op(), "Out") != ctx.InputName("X"), "Out may not be X");
  ctx.SetOutput("Out", out, ctx.InputType("X"));
}

// Walks Out in order; the innermost dim is a strided loop over X.
template <class T>
void Permute(const T* in, const Shape& in_shape, const std::vector<int64_t>& perm, T* out) {
  const int rank = static_cast<int>(in_shape.size());
  const int64_t n = NumElements(in_shape);
  if (n == 0) return;
  if (rank <= 1) {
    std::memcpy(out, in, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  int64_t in_stride[kMaxTransposeRank];
  in_stride[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * in_shape[d + 1];
  int64_t dims[kMaxTransposeRank];     // Out's dims
  int64_t strides[kMaxTransposeRank];  // X's stride for a step along each Out dim
  for (int i = 0; i < rank; ++i) {
    dims[i] = in_shape[static_cast<size_t>(perm[i])];
    strides[i] = in_stride[perm[i]];
  }
  const int64_t last = dims[rank - 1];
  const int64_t step = strides[rank - 1];
  int64_t index[kMaxTransposeRank] = {};
  int64_t base = 0;
  for (int64_t done = 0; done < n; done += last) {
    if (step == 1) {
      std::memcpy(out + done, in + base, static_cast<size_t>(last) * sizeof(T));
    } else {
      for (int64_t j = 0; j < last; ++j) out[done + j] = in[base + j * step];
    }
    // Advance the odometer over Out's outer dims.
    for (int d = rank - 2; d >= 0; --d) {
      base += strides[d];
      if (++index[d] < dims[d]) break;
      base -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

void TransposeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const std::vector<int64_t> perm = ctx.Attr<std::vector<int64_t>>("axis");
  CheckPermutation(perm, static_cast<size_t>(x.rank()));
  Shape out_shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out_shape[i] = x.dim(static_cast<int>(perm[i]));
  Tensor* out = ctx.Output("Out");
  VisitDataType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    Permute(in, x.shape(), perm, out->Allocate<T>(out_shape));
  });
}

// The gradient is the inverse permutation applied to Out@GRAD.
std::vector<proto::OpDesc> TransposeGrad(const proto::OpDesc& fwd) {
  const proto::Attr* attr = FindAttr(fwd, "axis");
  RILL_CHECK(attr != nullptr, kInvalidArgument, "transpose has no axis attribute");
  const std::vector<int64_t> perm = AttrValue<std::vector<int64_t>>(*attr);
  CheckPermutation(perm, perm.size());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  proto::OpDesc grad;
  grad.set_type("transpose");
  SetInput(&grad, "X", {GradVarName(OutputVar(fwd, "Out"))});
  SetOutput(&grad, "Out", {GradVarName(InputVar(fwd, "X"))});
  SetAttr(&grad, "axis", inverse);
  return {grad};
}

}  // namespace

RILL_REGISTER_OP(transpose,
                 OpSchema("transpose")
                     .Doc("Out = X with dims permuted: Out.dims[i] = X.dims[axis[i]].")
                     .Input("X", "input tensor")
                     .Output("Out", "the permuted tensor")
                     .RequiredAttr("axis", AttrType::kInts, "the permutation of X's dims")
                     .InferShape(TransposeShape)
                     .CpuKernel(TransposeKernel)
                     .Grad(TransposeGrad));

}  // namespace rill
