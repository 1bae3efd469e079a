// fill_constant: Out = a tensor of the given shape and type, every element `value`.
#include "ops/tensor/fill_constant_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void FillConstantShape(ShapeContext& ctx) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) {
    ctx.Check(d >= 0, "shape ", ShapeToString(shape), " has a negative dim");
  }
  ctx.SetOutput("Out", shape, ParseDataType(ctx.Attr<std::string>("dtype")));
}

void FillConstantKernel(KernelContext& ctx) {
  const FillConstantAttrs attrs = ReadFillConstantAttrs(ctx);
  Tensor* out = ctx.Output("Out");
  out->Allocate(attrs.dtype, attrs.shape);
  out->Fill(attrs.value);
}

}  // namespace

RILL_REGISTER_OP(fill_constant,
                 OpSchema("fill_constant")
                     .Doc("Out = a tensor of `shape` and `dtype` filled with `value`.")
                     .Output("Out", "the filled tensor")
                     .RequiredAttr("shape", AttrType::kInts, "dims of Out, each >= 0", AtLeast(0))
                     .Attr("dtype", "float32", "element type of Out",
                           OneOf({"float32", "float64", "int32", "int64"}))
                     .Attr("value", 0.0f, "the value of every element")
                     .InferShape(FillConstantShape)
                     .CpuKernel(FillConstantKernel));

}  // namespace rill
