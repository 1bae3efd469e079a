#include "ops/nn/rnn_util.h"

#include <algorithm>

#include "ops/math/blas.h"
#include "ops/nn/thread_scratch.h"
#include "rill/error.h"
#include "rill/op_desc.h"

namespace rill {
namespace {

struct StatesBeforeTag;  // WriteRnnGradients' ThreadScratch

// Declared `slot` of `op` must be `want` (-1: any) of `dtype`.
void CheckDeclared(const ShapeContext& ctx, const char* op, const char* slot, const Shape& want,
                   DataType dtype, const char* what) {
  const Shape& got = ctx.InputShape(slot);
  ctx.Check(ShapesCompatible(got, want), op, ": ", slot, " (", ctx.InputName(slot), ") is ",
            ShapeToString(got), " but must be ", ShapeToString(want), " (", what, ")");
  ctx.Check(ctx.InputType(slot) == dtype, op, ": ", slot, " (", ctx.InputName(slot), ") is ",
            DataTypeName(ctx.InputType(slot)), " but must be ", DataTypeName(dtype));
}

// Input `slot` of a kernel of `op` must be `want` of `dtype`.
const Tensor& CheckedInput(const KernelContext& ctx, const char* op, const char* slot,
                           const Shape& want, DataType dtype, const char* what) {
  const Tensor& t = ctx.Input(slot);
  RILL_CHECK(t.shape() == want && t.dtype() == dtype, kInvalidArgument, op, ": ", slot, " (",
             ctx.InputName(slot), ") is ", t.Describe(), " but must be ", ShapeToString(want), " ",
             DataTypeName(dtype), " (", what, ")");
  return t;
}

}  // namespace

RnnDims InferRnnInputs(ShapeContext& ctx, const char* op, int gates) {
  const Shape& x = ctx.InputShape("X");
  ctx.Check(x.size() == 3, op, ": X (", ctx.InputName("X"), ") must be [N, T, D], is ",
            ShapeToString(x));
  const DataType dtype = ctx.InputType("X");
  ctx.Check(dtype == DataType::kFloat32 || dtype == DataType::kFloat64, op, ": X (",
            ctx.InputName("X"), ") is ", DataTypeName(dtype), " but must be float32 or float64");
  const Shape& hw = ctx.InputShape("HiddenWeight");
  ctx.Check(hw.size() == 2 && hw[0] > 0, op, ": HiddenWeight (", ctx.InputName("HiddenWeight"),
            ") must be [H, ", gates, " * H] with a known H, is ", ShapeToString(hw));
  RnnDims d{x[0], x[1], x[2], hw[0], gates};
  CheckDeclared(ctx, op, "HiddenWeight", {d.hidden, d.gate_width()}, dtype, "[H, G * H]");
  CheckDeclared(ctx, op, "InputWeight", {d.input, d.gate_width()}, dtype, "[D of X, G * H]");
  if (ctx.HasInput("Bias")) CheckDeclared(ctx, op, "Bias", {d.gate_width()}, dtype, "[G * H]");
  if (ctx.HasInput("Length")) {
    CheckDeclared(ctx, op, "Length", {d.batch}, DataType::kInt64, "one length per sequence of X");
  }
  return d;
}

void InferRnnGradShape(ShapeContext& ctx, const char* op, int gates) {
  const RnnDims d = InferRnnInputs(ctx, op, gates);
  const Shape out = {d.batch, d.steps, d.hidden};
  if (ctx.HasInput("Out@GRAD")) {
    ctx.Check(ShapesCompatible(ctx.InputShape("Out@GRAD"), out), op, ": Out@GRAD (",
              ctx.InputName("Out@GRAD"), ") is ", ShapeToString(ctx.InputShape("Out@GRAD")),
              " but must be [N, T, H] ", ShapeToString(out));
  }
  const DataType dtype = ctx.InputType("X");
  ctx.SetOutput("X@GRAD", {d.batch, d.steps, d.input}, dtype);
  ctx.SetOutput("InputWeight@GRAD", {d.input, d.gate_width()}, dtype);
  ctx.SetOutput("HiddenWeight@GRAD", {d.hidden, d.gate_width()}, dtype);
  ctx.SetOutput("Bias@GRAD", {d.gate_width()}, dtype);
}

proto::OpDesc RnnGradOp(const proto::OpDesc& fwd, const char* grad_type,
                        const std::vector<const char*>& saved,
                        const std::vector<const char*>& differentiated) {
  proto::OpDesc grad;
  grad.set_type(grad_type);
  for (const char* slot : {"X", "InputWeight", "HiddenWeight", "Length"}) {
    const auto vars = InputVars(fwd, slot);
    if (!vars.empty()) SetInput(&grad, slot, vars);
  }
  for (const char* slot : saved) SetInput(&grad, slot, {OutputVar(fwd, slot)});
  for (const char* slot : differentiated) {
    SetInput(&grad, StrCat(slot, kGradSuffix), {GradVarName(OutputVar(fwd, slot))});
  }
  for (const char* slot : {"X", "InputWeight", "HiddenWeight", "Bias"}) {
    SetOutput(&grad, StrCat(slot, kGradSuffix), {GradVarName(InputVar(fwd, slot))});
  }
  return grad;
}

RnnInputs CheckRnnKernelInputs(const KernelContext& ctx, const char* op, int gates, bool grad) {
  RnnInputs in;
  in.x = &ctx.Input("X");
  RILL_CHECK(in.x->rank() == 3, kInvalidArgument, op, ": X (", ctx.InputName("X"),
             ") must be [N, T, D], is ", in.x->Describe());
  const DataType dtype = in.x->dtype();
  RILL_CHECK(dtype == DataType::kFloat32 || dtype == DataType::kFloat64, kInvalidArgument, op,
             ": X (", ctx.InputName("X"), ") is ", in.x->Describe(),
             " but must be float32 or float64");
  in.hidden_weight = &ctx.Input("HiddenWeight");
  const int64_t h = in.hidden_weight->rank() == 2 ? in.hidden_weight->dim(0) : -1;
  in.dims = RnnDims{in.x->dim(0), in.x->dim(1), in.x->dim(2), h, gates};
  const RnnDims& d = in.dims;
  CheckedInput(ctx, op, "HiddenWeight", {h, d.gate_width()}, dtype, "[H, G * H]");
  in.input_weight =
      &CheckedInput(ctx, op, "InputWeight", {d.input, d.gate_width()}, dtype, "[D of X, G * H]");
  if (!grad) in.bias = &CheckedInput(ctx, op, "Bias", {d.gate_width()}, dtype, "[G * H]");
  in.lengths.assign(static_cast<size_t>(d.batch), d.steps);
  if (ctx.HasInput("Length")) {
    const Tensor& given =
        CheckedInput(ctx, op, "Length", {d.batch}, DataType::kInt64, "one per sequence of X");
    // A device's lengths are read on the host (the CUDA kernels' steps ask them).
    const Tensor len = given.place().host_memory() ? given : given.CopyTo(Place::Cpu());
    for (int64_t n = 0; n < d.batch; ++n) {
      const int64_t l = len.data<int64_t>()[n];
      RILL_CHECK(l >= 0 && l <= d.steps, kInvalidArgument, op, ": Length (",
                 ctx.InputName("Length"), ") of sequence ", n, " is ", l, ", outside [0, ", d.steps,
                 "] (T of X)");
      in.lengths[static_cast<size_t>(n)] = l;
    }
  }
  return in;
}

const Tensor* OptionalRnnTensor(const KernelContext& ctx, const char* op, const char* slot,
                                const Shape& shape, DataType dtype) {
  if (!ctx.HasInput(slot) || !ctx.InputReady(slot)) return nullptr;
  return &CheckedInput(ctx, op, slot, shape, dtype, "as the forward op made it");
}

const Tensor& RequiredRnnTensor(const KernelContext& ctx, const char* op, const char* slot,
                                const Shape& shape, DataType dtype) {
  RILL_CHECK(ctx.HasInput(slot), kInvalidArgument, op, ": needs the forward ", slot);
  return CheckedInput(ctx, op, slot, shape, dtype, "as the forward op made it");
}

template <class T>
void ProjectInputs(const RnnInputs& in, T* projected) {
  const RnnDims& d = in.dims;
  const int64_t rows = d.batch * d.steps, width = d.gate_width();
  const T* bias = in.bias->data<T>();
  for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + width, projected + r * width);
  Gemm<T>(false, false, rows, width, d.input, T(1), in.x->data<T>(), in.input_weight->data<T>(),
          T(1), projected);
}

template <class T>
void WriteRnnGradients(KernelContext& ctx, const RnnInputs& in, const T* d_input, const T* d_hidden,
                       const T* out) {
  const RnnDims& d = in.dims;
  const int64_t rows = d.batch * d.steps, width = d.gate_width();
  // Every input was read: outputs are allocated only now (a gradient output
  // may share its buffer with a gradient input).
  if (ctx.HasOutput("X@GRAD")) {
    T* dx = ctx.Output("X@GRAD")->Allocate<T>({d.batch, d.steps, d.input});
    Gemm<T>(false, true, rows, d.input, width, T(1), d_input, in.input_weight->data<T>(), T(0), dx);
  }
  if (ctx.HasOutput("InputWeight@GRAD")) {
    T* dw = ctx.Output("InputWeight@GRAD")->Allocate<T>({d.input, width});
    Gemm<T>(true, false, d.input, width, rows, T(1), in.x->data<T>(), d_input, T(0), dw);
  }
  if (ctx.HasOutput("HiddenWeight@GRAD")) {
    // Step t of sequence n started from Out[n, t-1] (from zero at t = 0):
    // one GEMM over every row of dHidden against those states, laid out as
    // dHidden is. (A GEMM per sequence, of T - 1 rows each, ran at a fraction
    // of the speed.)
    T* before = ThreadScratch<T, StatesBeforeTag>(rows * d.hidden);
    for (int64_t n = 0; n < d.batch; ++n) {
      T* first = before + n * d.steps * d.hidden;
      std::fill(first, first + d.hidden, T(0));
      std::copy(out + n * d.steps * d.hidden, out + ((n + 1) * d.steps - 1) * d.hidden,
                first + d.hidden);
    }
    T* dw = ctx.Output("HiddenWeight@GRAD")->Allocate<T>({d.hidden, width});
    Gemm<T>(true, false, d.hidden, width, rows, T(1), before, d_hidden, T(0), dw);
  }
  if (ctx.HasOutput("Bias@GRAD")) {
    T* db = ctx.Output("Bias@GRAD")->Allocate<T>({width});
    std::fill(db, db + width, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = d_input + r * width;
      for (int64_t j = 0; j < width; ++j) db[j] += row[j];
    }
  }
}

template void ProjectInputs<float>(const RnnInputs&, float*);
template void ProjectInputs<double>(const RnnInputs&, double*);
template void WriteRnnGradients<float>(KernelContext&, const RnnInputs&, const float*, const float*,
                                       const float*);
template void WriteRnnGradients<double>(KernelContext&, const RnnInputs&, const double*,
                                        const double*, const double*);

}  // namespace rill
