// fill_constant_batch_size_like: fill_constant whose shape takes one dim from
// Input at run time (Fluid's op): the zero state of a recurrent loop,
// [batch, hidden], where the batch is known only when the data arrives.
#include <string>
#include <vector>

#include "ops/decimal_double.h"
#include "ops/tensor/step_kernels.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

// `shape` with dim output_dim_idx replaced by `batch`; checks the indices.
Shape BatchShape(const std::vector<int64_t>& shape, int output_dim, int64_t batch) {
  RILL_CHECK(output_dim >= 0 && output_dim < static_cast<int>(shape.size()), kInvalidArgument,
             "fill_constant_batch_size_like: output_dim_idx ", output_dim, " is outside shape ",
             ShapeToString(shape));
  Shape out = shape;
  out[static_cast<size_t>(output_dim)] = batch;
  for (size_t d = 0; d < out.size(); ++d) {
    RILL_CHECK(out[d] >= 0 || (d == static_cast<size_t>(output_dim) && out[d] == -1),
               kInvalidArgument, "fill_constant_batch_size_like: shape ", ShapeToString(shape),
               " has a negative dim besides output_dim_idx ", output_dim);
  }
  return out;
}

void FillBatchShape(ShapeContext& ctx) {
  const Shape& input = ctx.InputShape("Input");
  const int input_dim = ctx.Attr<int>("input_dim_idx");
  ctx.Check(input_dim >= 0 && input_dim < static_cast<int>(input.size()), "input_dim_idx ",
            input_dim, " is outside Input (", ctx.InputName("Input"), ") ", ShapeToString(input));
  ctx.SetOutput("Out",
                BatchShape(ctx.Attr<std::vector<int64_t>>("shape"), ctx.Attr<int>("output_dim_idx"),
                           input[static_cast<size_t>(input_dim)]),
                ParseDataType(ctx.Attr<std::string>("dtype")));
}

}  // namespace

// Computed on the host on every place (step_kernels.h).
void FillConstantBatchSizeLikeKernel(KernelContext& ctx) {
  const Tensor& input = ctx.Input("Input");
  const int input_dim = ctx.Attr<int>("input_dim_idx");
  RILL_CHECK(input_dim >= 0 && input_dim < input.rank(), kInvalidArgument,
             "fill_constant_batch_size_like: input_dim_idx ", input_dim, " is outside Input (",
             ctx.InputName("Input"), ") ", input.Describe());
  Tensor host(ParseDataType(ctx.Attr<std::string>("dtype")),
              BatchShape(ctx.Attr<std::vector<int64_t>>("shape"), ctx.Attr<int>("output_dim_idx"),
                         input.dim(input_dim)));
  host.Fill(DecimalDouble(ctx.Attr<float>("value")));
  PutOnPlace(std::move(host), ctx.Output("Out"), ctx.place());
}

RILL_REGISTER_OP(fill_constant_batch_size_like,
                 OpSchema("fill_constant_batch_size_like")
                     .Doc("Out = a tensor of `shape` (dim output_dim_idx taken from Input's dim "
                          "input_dim_idx) and `dtype`, filled with `value`.")
                     .Input("Input", "gives the batch size (only its shape is read)", kNoGradient)
                     .Output("Out", "the filled tensor", kNoGradient)
                     .RequiredAttr("shape", AttrType::kInts,
                                   "dims of Out; dim output_dim_idx is replaced", AtLeast(-1))
                     .Attr("input_dim_idx", 0, "which dim of Input is the batch", AtLeast(0))
                     .Attr("output_dim_idx", 0, "which dim of Out is the batch", AtLeast(0))
                     .Attr("dtype", "float32", "element type of Out",
                           OneOf({"float32", "float64", "int32", "int64"}))
                     .Attr("value", 0.0f, "the value of every element")
                     .InferShape(FillBatchShape)
                     .CpuKernel(FillConstantBatchSizeLikeKernel));

}  // namespace rill
