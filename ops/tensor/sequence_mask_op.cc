// sequence_mask: Y[n, t] = 1 where t < X[n], else 0, for sequences padded to
// `maxlen` steps (Fluid's op; the unrolled recurrent layers of
// builder_rnn.cc mask their padded steps with it).
#include "ops/tensor/step_kernels.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

void InferSequenceMaskShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  ctx.Check(x.size() == 1, "sequence_mask: X (", ctx.InputName("X"), ") must be [N], is ",
            ShapeToString(x));
  ctx.Check(ctx.InputType("X") == DataType::kInt64, "sequence_mask: X (", ctx.InputName("X"),
            ") must be int64, is ", DataTypeName(ctx.InputType("X")));
  ctx.SetOutput("Y", {x[0], static_cast<int64_t>(ctx.Attr<int>("maxlen"))},
                ParseDataType(ctx.Attr<std::string>("out_dtype")));
}

}  // namespace

// Computed on the host on every place (step_kernels.h): the lengths are checked there.
void SequenceMaskKernel(KernelContext& ctx) {
  const Tensor& given = ctx.Input("X");
  const Tensor x = given.place().host_memory() ? given : given.CopyTo(Place::Cpu());
  RILL_CHECK(x.rank() == 1 && x.dtype() == DataType::kInt64, kInvalidArgument, "sequence_mask: X (",
             ctx.InputName("X"), ") is ", x.Describe(), " but must be int64 [N]");
  const int64_t rows = x.dim(0), maxlen = static_cast<int64_t>(ctx.Attr<int>("maxlen"));
  const int64_t* length = x.data<int64_t>();
  for (int64_t n = 0; n < rows; ++n) {
    RILL_CHECK(length[n] >= 0 && length[n] <= maxlen, kInvalidArgument, "sequence_mask: X (",
               ctx.InputName("X"), ") row ", n, " is ", length[n], ", outside [0, ", maxlen, "]");
  }
  Tensor y(ParseDataType(ctx.Attr<std::string>("out_dtype")), {rows, maxlen});
  VisitDataType(y.dtype(), [&]<class T>() {
    T* out = y.mutable_data<T>();
    for (int64_t n = 0; n < rows; ++n) {
      for (int64_t t = 0; t < maxlen; ++t) out[n * maxlen + t] = t < length[n] ? T(1) : T(0);
    }
  });
  PutOnPlace(std::move(y), ctx.Output("Y"), ctx.place());
}

RILL_REGISTER_OP(sequence_mask,
                 OpSchema("sequence_mask")
                     .Doc("Y[n, t] = 1 where t < X[n], else 0: the mask of sequences of lengths "
                          "X padded to maxlen steps.")
                     .Input("X", "int64 [N], each sequence's length, in [0, maxlen]", kNoGradient)
                     .Output("Y", "[N, maxlen] of out_dtype", kNoGradient)
                     .RequiredAttr("maxlen", AttrType::kInt, "the padded length", AtLeast(1))
                     .Attr("out_dtype", "float32", "element type of Y",
                           OneOf({"float32", "float64", "int32", "int64"}))
                     .InferShape(InferSequenceMaskShape)
                     .CpuKernel(SequenceMaskKernel));

}  // namespace rill
