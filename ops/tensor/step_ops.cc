// read_step and write_step: one step of a sequence tensor, picked by an index
// tensor, so that a While body can walk the steps of [N, T, ...] with its loop
// counter (the role of Fluid's tensor arrays, on a dense tensor). The step is
// a position along `axis`; the index is a one-element int32 or int64 tensor.
// The kernels move bytes through a CopyRowsFn: host rows here, a device's in
// step_op_cuda.cc.
#include <cstring>

#include "ops/tensor/step_kernels.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

// A sequence tensor seen as [outer, steps, inner] elements around `axis`.
struct StepLayout {
  int64_t outer = 1, steps = 0, inner = 1;
  size_t element = 0;  // bytes per element
  size_t row() const { return static_cast<size_t>(inner) * element; }
};

int StepAxis(int axis, int rank, const std::string& op, const std::string& x) {
  const int resolved = axis < 0 ? axis + rank : axis;
  RILL_CHECK(resolved >= 0 && resolved < rank, kInvalidArgument, op, ": axis ", axis,
             " is outside the dims of ", x, " (rank ", rank, ")");
  return resolved;
}

// Shape with `axis` removed: one step of a sequence tensor.
Shape StepShape(const Shape& x, int axis) {
  Shape step;
  for (int d = 0; d < static_cast<int>(x.size()); ++d) {
    if (d != axis) step.push_back(x[static_cast<size_t>(d)]);
  }
  return step;
}

StepLayout LayoutOf(const Tensor& x, int axis) {
  StepLayout layout;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < axis) layout.outer *= x.dim(d);
    if (d > axis) layout.inner *= x.dim(d);
  }
  layout.steps = x.dim(axis);
  layout.element = SizeOf(x.dtype());
  return layout;
}

// The step Index names, checked to lie in [0, steps).
int64_t StepIndex(const KernelContext& ctx, int64_t steps) {
  const Tensor& index = ctx.Input("Index");
  RILL_CHECK(index.numel() == 1 &&
                 (index.dtype() == DataType::kInt32 || index.dtype() == DataType::kInt64),
             kInvalidArgument, ctx.op().type(), ": Index (", ctx.InputName("Index"),
             ") must be one int32 or int64 element, is ", index.Describe());
  const double value =
      (index.place().host_memory() ? index : index.CopyTo(Place::Cpu())).GetAsDouble(0);
  RILL_CHECK(value >= 0 && value < static_cast<double>(steps), kOutOfRange, ctx.op().type(),
             ": Index (", ctx.InputName("Index"), ") is ", value, ", outside [0, ", steps, ") of ",
             ctx.InputName("X"));
  return static_cast<int64_t>(value);
}

// Step `t` of `seq` copied into `step`, by `copy`.
void ReadStepRows(CopyRowsFn copy, const StepLayout& l, int64_t t, const char* seq, char* step) {
  const size_t row = l.row();
  copy(step, row, seq + static_cast<size_t>(t) * row, static_cast<size_t>(l.steps) * row, row,
       l.outer);
}

// `step` copied into step `t` of `seq`; zeros there for a null `step`.
void WriteStepRows(CopyRowsFn copy, const StepLayout& l, int64_t t, char* seq, const char* step) {
  const size_t row = l.row();
  copy(seq + static_cast<size_t>(t) * row, static_cast<size_t>(l.steps) * row, step, row, row,
       l.outer);
}

// Zeros over the whole of `t`.
void ZeroAll(CopyRowsFn copy, Tensor* t) {
  if (t->bytes() > 0)
    copy(static_cast<char*>(t->raw_data()), t->bytes(), nullptr, 0, t->bytes(), 1);
}

const char* Bytes(const Tensor& t) { return static_cast<const char*>(t.raw_data()); }
char* Bytes(Tensor* t) { return static_cast<char*>(t->raw_data()); }

void CheckStepValue(const KernelContext& ctx, const Tensor& x, const Tensor& value, int axis,
                    const std::string& slot) {
  RILL_CHECK(value.dtype() == x.dtype() && value.shape() == StepShape(x.shape(), axis),
             kInvalidArgument, ctx.op().type(), ": ", slot, " (", ctx.InputName(slot), ") is ",
             value.Describe(), "; one step of ", ctx.InputName("X"), " ", x.Describe(),
             " along axis ", axis, " is ", DataTypeName(x.dtype()),
             ShapeToString(StepShape(x.shape(), axis)));
}

void CheckIndexShape(ShapeContext& ctx) {
  const DataType type = ctx.InputType("Index");
  ctx.Check(type == DataType::kInt32 || type == DataType::kInt64, "Index (", ctx.InputName("Index"),
            ") must be int32 or int64");
}

// ---------------------------------------------------------------- read_step

void ReadStepShape(ShapeContext& ctx) {
  CheckIndexShape(ctx);
  const Shape& x = ctx.InputShape("X");
  const int axis =
      StepAxis(ctx.Attr<int>("axis"), static_cast<int>(x.size()), "read_step", ctx.InputName("X"));
  ctx.SetOutput("Out", StepShape(x, axis), ctx.InputType("X"));
}

}  // namespace

void ReadStepOn(KernelContext& ctx, CopyRowsFn copy) {
  const Tensor& x = ctx.Input("X");
  const int axis = StepAxis(ctx.Attr<int>("axis"), x.rank(), "read_step", ctx.InputName("X"));
  const StepLayout layout = LayoutOf(x, axis);
  const int64_t t = StepIndex(ctx, layout.steps);
  Tensor* out = ctx.Output("Out");
  out->Allocate(x.dtype(), StepShape(x.shape(), axis), ctx.place());
  ReadStepRows(copy, layout, t, Bytes(x), Bytes(out));
}

// X@GRAD = zeros with step Index = Out@GRAD (zeros without one).
void ReadStepGradOn(KernelContext& ctx, CopyRowsFn copy) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const int axis = StepAxis(ctx.Attr<int>("axis"), x.rank(), "read_step", ctx.InputName("X"));
  const StepLayout layout = LayoutOf(x, axis);
  const int64_t t = StepIndex(ctx, layout.steps);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Allocate(x.dtype(), x.shape(), ctx.place());
  ZeroAll(copy, dx);
  if (!ctx.InputReady("Out@GRAD")) return;
  const Tensor& dout = ctx.Input("Out@GRAD");
  CheckStepValue(ctx, x, dout, axis, "Out@GRAD");
  WriteStepRows(copy, layout, t, Bytes(dx), Bytes(dout));
}

namespace {

void XGradShape(ShapeContext& ctx) {
  if (ctx.HasOutput("X@GRAD")) ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

// ---------------------------------------------------------------- write_step

void WriteStepShape(ShapeContext& ctx) {
  CheckIndexShape(ctx);
  const Shape& x = ctx.InputShape("X");
  const int axis =
      StepAxis(ctx.Attr<int>("axis"), static_cast<int>(x.size()), "write_step", ctx.InputName("X"));
  const Shape want = StepShape(x, axis);
  const Shape& value = ctx.InputShape("Value");
  ctx.Check(ctx.InputType("Value") == ctx.InputType("X") && ShapesCompatible(value, want),
            "write_step: Value (", ctx.InputName("Value"), ") ", ShapeToString(value),
            " must be one step of X (", ctx.InputName("X"), "): ", ShapeToString(want));
  ctx.SetOutput("Out", x, ctx.InputType("X"));
}

}  // namespace

void WriteStepOn(KernelContext& ctx, CopyRowsFn copy) {
  const Tensor& x = ctx.Input("X");
  const Tensor& value = ctx.Input("Value");
  const int axis = StepAxis(ctx.Attr<int>("axis"), x.rank(), "write_step", ctx.InputName("X"));
  CheckStepValue(ctx, x, value, axis, "Value");
  const StepLayout layout = LayoutOf(x, axis);
  const int64_t t = StepIndex(ctx, layout.steps);
  Tensor* out = ctx.Output("Out");
  if (out != &x) {
    out->CopyFrom(x);
  } else if (x.shares_buffer()) {
    *out = x.Clone();  // in place, but another tensor views X's buffer
  }
  WriteStepRows(copy, layout, t, Bytes(out), Bytes(value));
}

// X@GRAD = Out@GRAD with step Index zeroed (that step was overwritten);
// Value@GRAD = Out@GRAD's step Index. Zeros without Out@GRAD.
void WriteStepGradOn(KernelContext& ctx, CopyRowsFn copy) {
  const Tensor& x = ctx.Input("X");
  const int axis = StepAxis(ctx.Attr<int>("axis"), x.rank(), "write_step", ctx.InputName("X"));
  const StepLayout layout = LayoutOf(x, axis);
  const int64_t t = StepIndex(ctx, layout.steps);
  const bool has_dout = ctx.InputReady("Out@GRAD");
  if (has_dout) {
    const Tensor& dout = ctx.Input("Out@GRAD");
    RILL_CHECK(dout.dtype() == x.dtype() && dout.shape() == x.shape(), kInvalidArgument,
               "write_step_grad: Out@GRAD (", ctx.InputName("Out@GRAD"), ") is ", dout.Describe(),
               ", X is ", x.Describe());
  }
  if (ctx.HasOutput("Value@GRAD")) {
    Tensor* dvalue = ctx.Output("Value@GRAD");
    dvalue->Allocate(x.dtype(), StepShape(x.shape(), axis), ctx.place());
    if (has_dout) {
      ReadStepRows(copy, layout, t, Bytes(ctx.Input("Out@GRAD")), Bytes(dvalue));
    } else {
      ZeroAll(copy, dvalue);
    }
  }
  if (ctx.HasOutput("X@GRAD")) {
    Tensor* dx = ctx.Output("X@GRAD");
    if (has_dout) {
      dx->CopyFrom(ctx.Input("Out@GRAD"));
    } else {
      dx->Allocate(x.dtype(), x.shape(), ctx.place());
      ZeroAll(copy, dx);
    }
    WriteStepRows(copy, layout, t, Bytes(dx), nullptr);
  }
}

namespace {

void WriteStepGradShape(ShapeContext& ctx) {
  XGradShape(ctx);
  if (ctx.HasOutput("Value@GRAD")) {
    ctx.SetOutput("Value@GRAD", ctx.InputShape("Value"), ctx.InputType("Value"));
  }
}

}  // namespace

void PutOnPlace(Tensor host, Tensor* out, Place place) {
  *out = place.host_memory() ? std::move(host) : host.CopyTo(place);
}

namespace {

// Host memory's rows (CopyRowsFn).
void CopyHostRows(char* dst, size_t dst_pitch, const char* src, size_t src_pitch, size_t row,
                  int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    char* to = dst + static_cast<size_t>(r) * dst_pitch;
    if (src == nullptr) {
      std::memset(to, 0, row);
    } else {
      std::memcpy(to, src + static_cast<size_t>(r) * src_pitch, row);
    }
  }
}

void ReadStepKernel(KernelContext& ctx) { ReadStepOn(ctx, CopyHostRows); }
void ReadStepGradKernel(KernelContext& ctx) { ReadStepGradOn(ctx, CopyHostRows); }
void WriteStepKernel(KernelContext& ctx) { WriteStepOn(ctx, CopyHostRows); }
void WriteStepGradKernel(KernelContext& ctx) { WriteStepGradOn(ctx, CopyHostRows); }

}  // namespace

RILL_REGISTER_OP(read_step,
                 OpSchema("read_step")
                     .Doc("Out = step Index of X along axis (X [.., T, ..] -> Out without that "
                          "dim): a While body's read of one step of a sequence.")
                     .Input("X", "the sequence")
                     .Input("Index", "int32 or int64, one element in [0, T)", kNoGradient)
                     .Output("Out", "X's step Index")
                     .Attr("axis", 1, "the steps' axis (negative counts from the end)")
                     .InferShape(ReadStepShape)
                     .CpuKernel(ReadStepKernel)
                     .DefaultGrad());

RILL_REGISTER_OP(read_step_grad,
                 OpSchema("read_step_grad")
                     .Doc("X@GRAD = zeros of X's shape but step Index, which is Out@GRAD.")
                     .Input("X", "the forward sequence", kNoGradient)
                     .Input("Index", "the forward index", kNoGradient)
                     .Input("Out", "the forward output", kNoGradient)
                     .Input("Out@GRAD", "gradient of Out (absent: zeros)", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Attr("axis", 1, "the forward axis")
                     .InferShape(XGradShape)
                     .CpuKernel(ReadStepGradKernel));

RILL_REGISTER_OP(write_step,
                 OpSchema("write_step")
                     .Doc("Out = X with step Index along axis replaced by Value: a While body's "
                          "write of one step of a sequence (Out may be X).")
                     .Input("X", "the sequence")
                     .Input("Value", "the step: X's shape without the axis")
                     .Input("Index", "int32 or int64, one element in [0, T)", kNoGradient)
                     .Output("Out", "X with the step written")
                     .Attr("axis", 1, "the steps' axis (negative counts from the end)")
                     .InferShape(WriteStepShape)
                     .CpuKernel(WriteStepKernel)
                     .DefaultGrad());

RILL_REGISTER_OP(write_step_grad,
                 OpSchema("write_step_grad")
                     .Doc("X@GRAD = Out@GRAD with step Index zeroed; Value@GRAD = that step of "
                          "Out@GRAD.")
                     .Input("X", "the forward sequence", kNoGradient)
                     .Input("Value", "the forward step", kNoGradient)
                     .Input("Index", "the forward index", kNoGradient)
                     .Input("Out", "the forward output", kNoGradient)
                     .Input("Out@GRAD", "gradient of Out (absent: zeros)", kOptional)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Output("Value@GRAD", "gradient of Value", kOptional)
                     .Attr("axis", 1, "the forward axis")
                     .InferShape(WriteStepGradShape)
                     .CpuKernel(WriteStepGradKernel));

}  // namespace rill
