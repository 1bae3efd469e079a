// split: Out = X cut into parts along `axis`, `num` equal ones or of the
// sizes in `sections`. Its gradient joins the Out gradients back together.
#include <cstring>
#include <vector>

#include "ops/tensor/shape_util.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void SplitShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const int rank = static_cast<int>(x.size());
  const int axis = SplitAxis(ctx.Attr<int>("axis"), rank);
  const int outputs = ctx.OutputCount("Out");
  const std::vector<int64_t> sizes = SplitPartSizes(
      x[axis], ctx.Attr<int>("num"), ctx.Attr<std::vector<int64_t>>("sections"), outputs);
  for (const auto& name : OutputVars(ctx.op(), "Out")) {
    ctx.Check(name != ctx.InputName("X"), "Out may not be X (", name, ")");
  }
  for (int k = 0; k < outputs; ++k) {
    Shape s = x;
    s[axis] = sizes[static_cast<size_t>(k)];
    ctx.SetOutput("Out", s, ctx.InputType("X"), k);
  }
}

void SplitKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int rank = x.rank();
  const int axis = SplitAxis(ctx.Attr<int>("axis"), rank);
  const int outputs = ctx.OutputCount("Out");
  const std::vector<int64_t> sizes = SplitPartSizes(
      x.dim(axis), ctx.Attr<int>("num"), ctx.Attr<std::vector<int64_t>>("sections"), outputs);
  const DataType dtype = x.dtype();
  const size_t elem = SizeOf(dtype);
  const int64_t outer = DimProduct(x.shape(), 0, axis);
  const size_t inner = static_cast<size_t>(DimProduct(x.shape(), axis + 1, rank)) * elem;
  const size_t x_row = static_cast<size_t>(x.dim(axis)) * inner;
  const char* src = static_cast<const char*>(x.raw_data());
  Shape shape = x.shape();
  size_t offset = 0;
  for (int k = 0; k < outputs; ++k) {
    shape[axis] = sizes[static_cast<size_t>(k)];
    const size_t row = static_cast<size_t>(shape[axis]) * inner;
    Tensor* out = ctx.Output("Out", k);
    out->Allocate(dtype, shape);
    char* dst = static_cast<char*>(out->raw_data());
    if (row > 0) {
      for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * row, src + o * x_row + offset, row);
    }
    offset += row;
  }
}

// X@GRAD = the Out gradients joined along the axis; a missing one reads as zeros.
void SplitGradKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const int rank = x.rank();
  const int axis = SplitAxis(ctx.Attr<int>("axis"), rank);
  const int parts = ctx.InputCount("Out");
  RILL_CHECK(parts >= 1, kInvalidArgument, "split_grad needs the forward Out variables");
  const std::vector<int64_t> sizes = SplitPartSizes(
      x.dim(axis), ctx.Attr<int>("num"), ctx.Attr<std::vector<int64_t>>("sections"), parts);
  const DataType dtype = x.dtype();
  const Shape shape = x.shape();
  const size_t elem = SizeOf(dtype);
  const int64_t outer = DimProduct(shape, 0, axis);
  const size_t inner = static_cast<size_t>(DimProduct(shape, axis + 1, rank)) * elem;
  const size_t x_row = static_cast<size_t>(shape[axis]) * inner;
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Allocate(dtype, shape);
  char* dst = static_cast<char*>(dx->raw_data());
  SplitGradMatcher matcher(ctx);
  size_t offset = 0;
  for (int k = 0; k < parts; ++k) {
    const size_t row = static_cast<size_t>(sizes[static_cast<size_t>(k)]) * inner;
    const int g = matcher.Next(k);
    const char* src = nullptr;
    if (g >= 0 && ctx.InputReady("Out@GRAD", g)) {
      const Tensor& dout = ctx.Input("Out@GRAD", g);
      RILL_CHECK(dout.dtype() == dtype && static_cast<size_t>(dout.numel()) * elem == row * outer,
                 kInvalidArgument, "Out@GRAD[", g, "] ", dout.Describe(), " does not match part ",
                 k, " of X ", x.Describe());
      src = static_cast<const char*>(dout.raw_data());
    }
    if (row > 0) {
      for (int64_t o = 0; o < outer; ++o) {
        if (src != nullptr) {
          std::memcpy(dst + o * x_row + offset, src + o * row, row);
        } else {
          std::memset(dst + o * x_row + offset, 0, row);
        }
      }
    }
    offset += row;
  }
}

void SplitGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

}  // namespace

RILL_REGISTER_OP(
    split, OpSchema("split")
               .Doc("Out = X cut along axis into num equal parts or parts of the given sizes.")
               .Input("X", "input tensor")
               .Output("Out", "the parts, in order", kDuplicable)
               .Attr("axis", 0, "the axis to cut along (negative counts from the end)")
               .Attr("num", 0, "number of equal parts (0: one per Out variable)", AtLeast(0))
               .Attr("sections", std::vector<int64_t>{},
                     "sizes of the parts (one may be -1: the rest)", AtLeast(-1))
               .InferShape(SplitShape)
               .CpuKernel(SplitKernel)
               .DefaultGrad());

RILL_REGISTER_OP(split_grad,
                 OpSchema("split_grad")
                     .Doc("X@GRAD = the Out gradients joined along axis (missing ones as zeros).")
                     .Input("X", "the forward input", kNoGradient)
                     .Input("Out", "the forward outputs (for pairing gradients by name)",
                            kDuplicable | kNoGradient)
                     .Input("Out@GRAD", "gradients of Out", kDuplicable | kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Attr("axis", 0, "the forward axis")
                     .Attr("num", 0, "the forward num", AtLeast(0))
                     .Attr("sections", std::vector<int64_t>{}, "the forward sections", AtLeast(-1))
                     .InferShape(SplitGradShape)
                     .CpuKernel(SplitGradKernel));

}  // namespace rill
