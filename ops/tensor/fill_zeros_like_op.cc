// fill_zeros_like: Out = zeros with X's shape and type.
#include <cstring>

#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void FillZerosLikeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  // Copies: Out may be the same variable as X.
  const Shape shape = x.shape();
  const DataType dtype = x.dtype();
  Tensor* out = ctx.Output("Out");
  out->Allocate(dtype, shape);
  if (out->numel() > 0) std::memset(out->raw_data(), 0, out->bytes());
}

}  // namespace

// Out does not depend on X's values, so no gradient flows into X.
RILL_REGISTER_OP(fill_zeros_like, OpSchema("fill_zeros_like")
                                      .Doc("Out = zeros of X's shape and type.")
                                      .Input("X", "tensor giving the shape and type", kNoGradient)
                                      .Output("Out", "zeros, same shape and type as X")
                                      .InferShape(SameShapeAs("X", "Out"))
                                      .CpuKernel(FillZerosLikeKernel));

}  // namespace rill
