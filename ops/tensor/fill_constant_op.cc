// fill_constant: Out = a tensor of the given shape and type, every element `value`.
#include <charconv>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// `value` is a float32 attribute; 0.1f stands for the decimal 0.1. Widening it
// through its shortest decimal form fills float64 tensors with 0.1 itself
// rather than 0.100000001490116 (float32 outputs are unchanged).
double DecimalDouble(float f) {
  char text[32];
  const auto printed = std::to_chars(text, text + sizeof(text), f);
  double d = static_cast<double>(f);
  if (printed.ec == std::errc()) std::from_chars(text, printed.ptr, d);
  return d;
}

void FillConstantShape(ShapeContext& ctx) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) {
    ctx.Check(d >= 0, "shape ", ShapeToString(shape), " has a negative dim");
  }
  ctx.SetOutput("Out", shape, ParseDataType(ctx.Attr<std::string>("dtype")));
}

void FillConstantKernel(KernelContext& ctx) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) {
    RILL_CHECK(d >= 0, kInvalidArgument, "shape ", ShapeToString(shape), " has a negative dim");
  }
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  const float value = ctx.Attr<float>("value");
  Tensor* out = ctx.Output("Out");
  out->Allocate(dtype, shape);
  out->Fill(DecimalDouble(value));
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
