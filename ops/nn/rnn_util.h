// What the fused recurrent ops (lstm_op.cc, gru_op.cc) share: their shape
// checks, the checked inputs of their kernels, the per-sequence lengths, and
// the big GEMMs before and after the recurrence. Stateless.
//
// Layout: X is [N, T, D], batch-major; InputWeight [D, G*H], HiddenWeight
// [H, G*H], Bias [G*H], G gates of H units each. Row n * T + t of an [N*T, ...]
// buffer belongs to sequence n, step t.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/math/vector_math.h"
#include "rill/kernel_context.h"
#include "rill/proto/program.pb.h"
#include "rill/shape.h"
#include "rill/shape_context.h"

namespace rill {

// Sizes of one recurrent op; -1 for a dim shape inference does not know.
struct RnnDims {
  int64_t batch = 0;   // N
  int64_t steps = 0;   // T
  int64_t input = 0;   // D
  int64_t hidden = 0;  // H
  int64_t gates = 0;   // G
  int64_t gate_width() const { return gates * hidden; }
};

// Shape inference of `op` (G = `gates`): X [N, T, D], InputWeight [D, G*H],
// HiddenWeight [H, G*H], Bias [G*H] of X's float type; Length, when bound,
// int64 [N]. Throws kInvalidArgument naming the op, the slot, its variable
// and the mismatched shape.
RnnDims InferRnnInputs(ShapeContext& ctx, const char* op, int gates);

// Shape inference of `op`, the gradient op (G = `gates`): its forward inputs
// checked as InferRnnInputs does, Out@GRAD (when bound) [N, T, H], and the
// outputs X@GRAD, InputWeight@GRAD, HiddenWeight@GRAD, Bias@GRAD.
void InferRnnGradShape(ShapeContext& ctx, const char* op, int gates);

// The gradient op `grad_type` of forward op `fwd`: its inputs X, the weights
// and Length, the forward outputs `saved` (what the backward pass reads), the
// gradients of the outputs `differentiated`, and the gradients of X, the
// weights and Bias.
proto::OpDesc RnnGradOp(const proto::OpDesc& fwd, const char* grad_type,
                        const std::vector<const char*>& saved,
                        const std::vector<const char*>& differentiated);

// The checked inputs of a kernel of `op`: X, the weights and, when present,
// Length with each length in [0, T] (absent: every sequence has T steps).
struct RnnInputs {
  const Tensor* x = nullptr;
  const Tensor* input_weight = nullptr;
  const Tensor* hidden_weight = nullptr;
  const Tensor* bias = nullptr;  // null in the gradient ops
  std::vector<int64_t> lengths;  // one per sequence
  RnnDims dims;
};
RnnInputs CheckRnnKernelInputs(const KernelContext& ctx, const char* op, int gates, bool grad);

// `slot` (a forward output or its gradient) of `op`, checked to be `shape` of
// `dtype`; null when the slot is unbound or holds nothing (a gradient nobody
// produced, which means zero).
const Tensor* OptionalRnnTensor(const KernelContext& ctx, const char* op, const char* slot,
                                const Shape& shape, DataType dtype);
// A last-state gradient of `op` (LastH@GRAD, LastC@GRAD) as a [N * H]
// vector to accumulate into; zeros when the slot is not bound.
template <class T>
std::vector<T> LastStateGradient(const KernelContext& ctx, const char* op, const char* slot,
                                 const RnnDims& d) {
  std::vector<T> g(static_cast<size_t>(d.batch * d.hidden), T(0));
  const Tensor* t = OptionalRnnTensor(ctx, op, slot, {d.batch, d.hidden}, DataTypeOf<T>());
  if (t != nullptr) std::copy(t->data<T>(), t->data<T>() + g.size(), g.begin());
  return g;
}

// Like OptionalRnnTensor, but the tensor must be there.
const Tensor& RequiredRnnTensor(const KernelContext& ctx, const char* op, const char* slot,
                                const Shape& shape, DataType dtype);

// [N*T, G*H] = X InputWeight + Bias: the input projections of every step.
template <class T>
void ProjectInputs(const RnnInputs& in, T* projected);

// The weight, bias and input gradients from the pre-activation gradients of
// every step: dInput [N*T, G*H] (the input side) and dHidden [N*T, G*H] (the
// recurrent side; LSTM's are the same), and the forward Out [N, T, H] (the
// hidden state each step started from). Writes the bound gradient outputs of
// `ctx`.
template <class T>
void WriteRnnGradients(KernelContext& ctx, const RnnInputs& in, const T* d_input, const T* d_hidden,
                       const T* out);

template <class T>
inline T SigmoidOf(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// tanh(x) = 2 sigmoid(2x) - 1: one exp, where glibc's tanhf goes through the
// much slower expm1f (a third of an LSTM step's time). Off from std::tanh by
// a few units in the last place of 1 (absolute), also near 0.
template <class T>
inline T TanhOf(T x) {
  return T(2) / (T(1) + std::exp(T(-2) * x)) - T(1);
}

// The same over arrays: x[i] = 1 / (1 + exp(-x[i])), and x[i] = 2 / (1 +
// exp(-2 x[i])) - 1, the exps taken together by vector_math.h (float32:
// glibc's vector library, within 3 ulp of exact; float64: std::exp, the same
// bits as SigmoidOf and TanhOf). `scratch` holds n values.
template <class T>
void SigmoidInPlace(T* x, int64_t n, T* scratch) {
  for (int64_t i = 0; i < n; ++i) scratch[i] = -x[i];
  VectorExp(scratch, scratch, n);
  for (int64_t i = 0; i < n; ++i) x[i] = T(1) / (T(1) + scratch[i]);
}

template <class T>
void TanhInPlace(T* x, int64_t n, T* scratch) {
  for (int64_t i = 0; i < n; ++i) scratch[i] = T(-2) * x[i];
  VectorExp(scratch, scratch, n);
  for (int64_t i = 0; i < n; ++i) x[i] = T(2) / (T(1) + scratch[i]) - T(1);
}

}  // namespace rill
