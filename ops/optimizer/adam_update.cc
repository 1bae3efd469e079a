// The CPU update of adam and adamw (adam_update.h): Adam with bias
// correction, computed as PyTorch's torch.optim.Adam does, after AdamW's
// decoupled decay of Param when there is one.
#include "ops/optimizer/adam_update.h"

#include <cmath>
#include <cstring>

#include "ops/optimizer/adam_lanes.h"
#include "ops/optimizer/optimizer_util.h"
#include "rill/parallel_for.h"

namespace rill {
namespace {

// Writes one value into a one-element output of the given float type. `shape`
// is copied by Allocate before anything else changes, so it may be out's own.
void WriteScalar(Tensor* out, DataType dtype, const Shape& shape, double value) {
  VisitFloatType(dtype, [&]<class T>() { out->Allocate<T>(shape)[0] = static_cast<T>(value); });
}

template <class T>
void AdamUpdate(T* p, T* m, T* v, const T* g, int64_t n, const AdamCoefficients<T>& c) {
  const int64_t done = AdamLanes(p, m, v, g, n, c);
  for (int64_t i = done; i < n; ++i) AdamElement(p[i], m[i], v[i], g[i], c);
}

// A dense update in runs that idle executor threads may take (ParallelFor):
// with the reduce strategy one place updates a shared parameter, and the
// places that own nothing more that step help with it. Every path gives the
// same bits (adam_lanes.h), so the runs change no value.
template <class T>
void AdamUpdateInParts(T* p, T* m, T* v, const T* g, int64_t n, const AdamCoefficients<T>& c) {
  ParallelRanges(n, kMinValuesPerPart, 64, [&](int64_t begin, int64_t end) {
    AdamUpdate(p + begin, m + begin, v + begin, g + begin, end - begin, c);
  });
}

}  // namespace

void AdamShape(ShapeContext& ctx) {
  const DataType t = ctx.InputType("Param");
  ctx.Check(t == DataType::kFloat32 || t == DataType::kFloat64,
            "Param must be float32 or float64, is ", DataTypeName(t));
  CheckLikeParam(ctx, "Grad");
  CheckLikeParam(ctx, "Moment1");
  CheckLikeParam(ctx, "Moment2");
  CheckScalarSlot(ctx, "LearningRate");
  CheckScalarSlot(ctx, "Beta1Pow");
  CheckScalarSlot(ctx, "Beta2Pow");
  const Shape& param = ctx.InputShape("Param");
  ctx.SetOutput("ParamOut", param, t);
  ctx.SetOutput("Moment1Out", param, t);
  ctx.SetOutput("Moment2Out", param, t);
  ctx.SetOutput("Beta1PowOut", ctx.InputShape("Beta1Pow"), ctx.InputType("Beta1Pow"));
  ctx.SetOutput("Beta2PowOut", ctx.InputShape("Beta2Pow"), ctx.InputType("Beta2Pow"));
}

void RunAdamKernel(KernelContext& ctx, bool decoupled_decay) {
  const Tensor& param = ctx.Input("Param");
  // A sparse gradient updates its rows only ("lazy" Adam, as PyTorch's
  // SparseAdam): the other rows keep their moments and values. AdamW would
  // decay every row, which a sparse step is meant not to touch: refused.
  const bool sparse = ctx.InputIsSelectedRows("Grad");
  RILL_CHECK(!sparse || !decoupled_decay, kUnimplemented,
             "adamw takes a dense Grad, got selected rows (use adam, or a dense embedding "
             "gradient)");
  const SelectedRows sparse_grad = sparse ? SparseGrad(ctx, param) : SelectedRows();
  const Tensor& grad = sparse ? sparse_grad.value : ctx.Input("Grad");
  const AdamArgs args = ReadAdamArgs(ctx, decoupled_decay);
  const double lr = ScalarValue(args.learning_rate);
  const double pow1 = ScalarValue(args.beta1_pow);
  const double pow2 = ScalarValue(args.beta2_pow);
  const DataType pow1_type = args.beta1_pow.dtype();
  const DataType pow2_type = args.beta2_pow.dtype();
  RILL_CHECK(pow1 < 1 && pow2 < 1, kInvalidArgument, "Beta1Pow (", pow1, ") and Beta2Pow (", pow2,
             ") must be below 1");
  const AdamOutputs out = CheckAdamOperands(ctx, args, param, sparse ? nullptr : &grad);
  VisitFloatType(param.dtype(), [&]<class T>() {
    const T* p_in = param.data<T>();
    const T* m_in = args.moment1.data<T>();
    const T* v_in = args.moment2.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = param.numel();
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    // In the usual case the outputs are the inputs and keep their buffers.
    T* p = out.param_out->Allocate<T>(param.shape());
    T* m = out.moment1_out->Allocate<T>(args.moment1.shape());
    T* v = out.moment2_out->Allocate<T>(args.moment2.shape());
    RILL_CHECK(p != m && p != v && m != v && p != g && m != g && v != g, kInvalidArgument,
               "ParamOut, Moment1Out, Moment2Out and Grad must not share memory");
    if (p != p_in) std::memcpy(p, p_in, bytes);
    if (m != m_in) std::memcpy(m, m_in, bytes);
    if (v != v_in) std::memcpy(v, v_in, bytes);
    AdamCoefficients<T> c;
    c.beta1 = static_cast<T>(args.beta1);
    c.one_minus_beta1 = static_cast<T>(1 - args.beta1);
    c.beta2 = static_cast<T>(args.beta2);
    c.one_minus_beta2 = static_cast<T>(1 - args.beta2);
    c.step_size = static_cast<T>(lr / (1 - pow1));
    c.bias_correction2_sqrt = static_cast<T>(std::sqrt(1 - pow2));
    c.epsilon = static_cast<T>(args.epsilon);
    c.decay = static_cast<T>(1 - lr * args.weight_decay);  // 1 for adam (weight_decay 0)
    if (!sparse) {
      AdamUpdateInParts(p, m, v, g, n, c);
      return;
    }
    const int64_t width = param.dim(0) == 0 ? 0 : n / param.dim(0);
    for (size_t i = 0; i < sparse_grad.rows.size(); ++i) {
      const int64_t at = sparse_grad.rows[i] * width;
      AdamUpdate(p + at, m + at, v + at, g + static_cast<int64_t>(i) * width, width, c);
    }
  });
  WriteScalar(ctx.Output("Beta1PowOut"), pow1_type, args.beta1_pow.shape(), pow1 * args.beta1);
  WriteScalar(ctx.Output("Beta2PowOut"), pow2_type, args.beta2_pow.shape(), pow2 * args.beta2);
}

OpSchema WithAdamSlots(OpSchema schema) {
  schema.Input("Param", "the parameter")
      .Input("Grad",
             "its gradient, same shape and type; or selected rows, which update only their rows")
      .Input("LearningRate", "learning rate, one float element")
      .Input("Moment1", "first moment, same shape and type as Param")
      .Input("Moment2", "second moment, same shape and type as Param")
      .Input("Beta1Pow", "beta1^t for this step t, one float element")
      .Input("Beta2Pow", "beta2^t for this step t, one float element")
      .Output("ParamOut", "the updated parameter (usually Param itself)")
      .Output("Moment1Out", "the updated first moment (usually Moment1)")
      .Output("Moment2Out", "the updated second moment (usually Moment2)")
      .Output("Beta1PowOut", "beta1^(t+1) (usually Beta1Pow)")
      .Output("Beta2PowOut", "beta2^(t+1) (usually Beta2Pow)")
      .Attr("beta1", 0.9f, "decay of the first moment", InRange(0, 1))
      .Attr("beta2", 0.999f, "decay of the second moment", InRange(0, 1))
      .Attr("epsilon", 1e-8f, "added to the denominator", InRange(0, 1e30))
      .InferShape(AdamShape);
  return schema;
}

}  // namespace rill
