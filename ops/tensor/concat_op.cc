// concat: Out = the X tensors joined along `axis`. Its gradient slices
// Out@GRAD back into one piece per input.
#include <cstring>
#include <vector>

#include "ops/tensor/shape_util.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

void ConcatShape(ShapeContext& ctx) {
  const int n = ctx.InputCount("X");
  ctx.Check(n >= 1, "concat needs at least one input");
  Shape out = ctx.InputShape("X", 0);
  const DataType dtype = ctx.InputType("X", 0);
  const int rank = static_cast<int>(out.size());
  const int axis = ConcatAxis(ctx.Attr<int>("axis"), rank);
  for (int i = 1; i < n; ++i) {
    const Shape& s = ctx.InputShape("X", i);
    ctx.Check(static_cast<int>(s.size()) == rank, "X[", i, "] ", ShapeToString(s),
              " has a different rank from X[0] ", ShapeToString(out));
    ctx.Check(ctx.InputType("X", i) == dtype, "X[", i, "] is ", DataTypeName(ctx.InputType("X", i)),
              ", X[0] is ", DataTypeName(dtype));
    for (int d = 0; d < rank; ++d) {
      if (d == axis) {
        out[d] = (out[d] < 0 || s[d] < 0) ? -1 : out[d] + s[d];
      } else {
        ctx.CheckDim(out[d], s[d], StrCat("X[", i, "] ", ShapeToString(s), " dim ", d));
        if (out[d] < 0) out[d] = s[d];
      }
    }
  }
  for (const auto& name : OutputVars(ctx.op(), "Out")) {
    for (int i = 0; i < n; ++i) {
      ctx.Check(name != ctx.InputName("X", i), "Out may not be one of the inputs (", name, ")");
    }
  }
  ctx.SetOutput("Out", out, dtype);
}

void ConcatKernel(KernelContext& ctx) {
  const int n = ctx.InputCount("X");
  RILL_CHECK(n >= 1, kInvalidArgument, "concat needs at least one input");
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const int axis = ConcatAxis(ctx.Attr<int>("axis"), rank);
  const DataType dtype = first.dtype();
  const size_t elem = SizeOf(dtype);
  const Shape out_shape = ConcatOutShape(ctx, axis);
  const int64_t outer = DimProduct(out_shape, 0, axis);
  const size_t out_row = static_cast<size_t>(DimProduct(out_shape, axis, rank)) * elem;
  Tensor* out = ctx.Output("Out");
  out->Allocate(dtype, out_shape);
  char* dst = static_cast<char*>(out->raw_data());
  size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    const size_t row = static_cast<size_t>(DimProduct(x.shape(), axis, rank)) * elem;
    if (row == 0) continue;
    const char* src = static_cast<const char*>(x.raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + o * out_row + offset, src + o * row, row);
    }
    offset += row;
  }
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled; zeros if Out@GRAD is missing.
void ConcatGradKernel(KernelContext& ctx) {
  const int n = ctx.InputCount("X");
  ConcatGradMatcher matcher(ctx.op(), n);
  if (!matcher.any()) return;
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const int axis = ConcatAxis(ctx.Attr<int>("axis"), rank);
  const DataType dtype = first.dtype();
  const size_t elem = SizeOf(dtype);
  const int64_t outer = DimProduct(first.shape(), 0, axis);
  size_t out_row = 0;
  for (int i = 0; i < n; ++i) {
    out_row += static_cast<size_t>(DimProduct(ctx.Input("X", i).shape(), axis, rank)) * elem;
  }
  const char* dout = nullptr;
  if (ctx.InputReady("Out@GRAD")) {
    const Tensor& g = ctx.Input("Out@GRAD");
    RILL_CHECK(g.dtype() == dtype && static_cast<size_t>(g.numel()) * elem == out_row * outer,
               kInvalidArgument, "Out@GRAD ", g.Describe(), " does not match the inputs");
    dout = static_cast<const char*>(g.raw_data());
  }
  size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    const size_t row = static_cast<size_t>(DimProduct(x.shape(), axis, rank)) * elem;
    const int g = matcher.Next(i, ctx.InputName("X", i));
    if (g >= 0) {
      const Shape shape = x.shape();  // X@GRAD is never X, but copy before allocating anyway
      Tensor* dx = ctx.Output(GradVarName("X"), g);
      dx->Allocate(dtype, shape);
      char* dst = static_cast<char*>(dx->raw_data());
      if (dout == nullptr) {
        if (row * outer > 0) std::memset(dst, 0, row * outer);
      } else if (row > 0) {
        for (int64_t o = 0; o < outer; ++o) {
          std::memcpy(dst + o * row, dout + o * out_row + offset, row);
        }
      }
    }
    offset += row;
  }
}

void ConcatGradShape(ShapeContext& ctx) {
  const int n = ctx.InputCount("X");
  ConcatGradMatcher matcher(ctx.op(), n);
  if (!matcher.bound()) return;
  for (int i = 0; i < n; ++i) {
    const int g = matcher.Next(i, ctx.InputName("X", i));
    if (g >= 0) ctx.SetOutput(GradVarName("X"), ctx.InputShape("X", i), ctx.InputType("X", i), g);
  }
}

}  // namespace

RILL_REGISTER_OP(concat,
                 OpSchema("concat")
                     .Doc("Out = the X tensors joined along axis.")
                     .Input("X", "tensors of equal shape except along axis", kDuplicable)
                     .Output("Out", "the joined tensor")
                     .Attr("axis", 0, "the axis to join along (negative counts from the end)")
                     .InferShape(ConcatShape)
                     .CpuKernel(ConcatKernel)
                     .DefaultGrad());

RILL_REGISTER_OP(concat_grad,
                 OpSchema("concat_grad")
                     .Doc("X@GRAD[i] = the part of Out@GRAD that X[i] filled.")
                     .Input("X", "the forward inputs", kDuplicable | kNoGradient)
                     .Input("Out", "the forward output (unused)", kOptional | kNoGradient)
                     .Input("Out@GRAD", "gradient of Out", kOptional)
                     .Output("X@GRAD", "gradients of the inputs that need one",
                             kDuplicable | kOptional)
                     .Attr("axis", 0, "the forward axis")
                     .InferShape(ConcatGradShape)
                     .CpuKernel(ConcatGradKernel));

}  // namespace rill
