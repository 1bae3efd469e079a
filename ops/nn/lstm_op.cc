// lstm: a long short-term memory layer over whole padded sequences, fused
// into one op, and its gradient (backpropagation through time). Gate order
// i, f, g (the candidate c~), o, as PyTorch's:
//
//   [i f g o] = x_t InputWeight + Bias + h_{t-1} HiddenWeight
//   i, f, o = sigmoid(.), g = tanh(.)
//   c_t = f * c_{t-1} + i * g,  h_t = o * tanh(c_t),  h_{-1} = c_{-1} = 0
//
// The input projections of all steps are one GEMM; each step is one GEMM
// with HiddenWeight and elementwise gate code. With Length, steps at
// t >= Length[n] leave sequence n's state unchanged and output zeros. Gates
// (activated) and Cells (c_t) are kept for the gradient.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/math/blas.h"
#include "ops/nn/rnn_util.h"
#include "ops/nn/thread_scratch.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

struct PreActivationTag;  // LstmGradKernel's ThreadScratch

constexpr int kLstmGates = 4;

// One step of one sequence: `gates` holds the input projection and becomes
// the activated gates; c and h (the state) are advanced in place.
// The activations go over whole gate rows (SigmoidInPlace, TanhInPlace: the
// exps vectorized); `scratch` holds a row of gates.
template <class T>
void LstmCellForward(int64_t hidden, const T* recurrent, T* gates, T* c, T* h, T* scratch) {
  for (int64_t j = 0; j < kLstmGates * hidden; ++j) gates[j] += recurrent[j];
  T* gi = gates;
  T* gf = gates + hidden;
  T* gg = gates + 2 * hidden;
  T* go = gates + 3 * hidden;
  SigmoidInPlace(gi, 2 * hidden, scratch);  // i and f
  TanhInPlace(gg, hidden, scratch);
  SigmoidInPlace(go, hidden, scratch);
  for (int64_t j = 0; j < hidden; ++j) {
    c[j] = gf[j] * c[j] + gi[j] * gg[j];
    h[j] = c[j];
  }
  TanhInPlace(h, hidden, scratch);
  for (int64_t j = 0; j < hidden; ++j) h[j] = go[j] * h[j];
}

void LstmKernel(KernelContext& ctx) {
  const RnnInputs in = CheckRnnKernelInputs(ctx, "lstm", kLstmGates, false);
  const RnnDims& d = in.dims;
  const int64_t n_all = d.batch, steps = d.steps, hidden = d.hidden, width = d.gate_width();
  VisitFloatType(in.x->dtype(), [&]<class T>() {
    T* gates = ctx.Output("Gates")->Allocate<T>({n_all, steps, width});
    T* out = ctx.Output("Out")->Allocate<T>({n_all, steps, hidden});
    T* cells = ctx.Output("Cells")->Allocate<T>({n_all, steps, hidden});
    ProjectInputs<T>(in, gates);
    const T* w_hidden = in.hidden_weight->data<T>();
    std::vector<T> h(static_cast<size_t>(n_all * hidden), T(0)), c(h.size(), T(0));
    std::vector<T> recurrent(static_cast<size_t>(n_all * width), T(0));
    std::vector<T> scratch(static_cast<size_t>(width));
    for (int64_t t = 0; t < steps; ++t) {
      if (t > 0) {  // h_{-1} = 0: the first step has no recurrent term
        Gemm<T>(false, false, n_all, width, hidden, T(1), h.data(), w_hidden, T(0),
                recurrent.data());
      }
      for (int64_t n = 0; n < n_all; ++n) {
        const int64_t row = n * steps + t;
        T* hn = h.data() + n * hidden;
        T* cn = c.data() + n * hidden;
        if (t >= in.lengths[static_cast<size_t>(n)]) {  // padding: state kept, output zero
          std::fill(gates + row * width, gates + (row + 1) * width, T(0));
          std::fill(out + row * hidden, out + (row + 1) * hidden, T(0));
          std::copy(cn, cn + hidden, cells + row * hidden);
          continue;
        }
        LstmCellForward<T>(hidden, recurrent.data() + n * width, gates + row * width, cn, hn,
                           scratch.data());
        std::copy(hn, hn + hidden, out + row * hidden);
        std::copy(cn, cn + hidden, cells + row * hidden);
      }
    }
    std::copy(h.begin(), h.end(), ctx.Output("LastH")->Allocate<T>({n_all, hidden}));
    std::copy(c.begin(), c.end(), ctx.Output("LastC")->Allocate<T>({n_all, hidden}));
  });
}

// One step of one sequence, backwards: from the gradients reaching h_t (dh,
// plus d_out when given) and c_t (dc), writes the pre-activation gradients
// `d_pre` and leaves in dc the gradient reaching c_{t-1}.
// `tanh_cell` holds tanh(c_t) (its row of Cells through TanhInPlace).
template <class T>
void LstmCellBackward(int64_t hidden, const T* gates, const T* tanh_cell, const T* cell_before,
                      const T* d_out, const T* dh, T* dc, T* d_pre) {
  const T* gi = gates;
  const T* gf = gates + hidden;
  const T* gg = gates + 2 * hidden;
  const T* go = gates + 3 * hidden;
  for (int64_t j = 0; j < hidden; ++j) {
    const T dh_j = d_out != nullptr ? dh[j] + d_out[j] : dh[j];
    const T tanh_c = tanh_cell[j];
    const T dc_j = dc[j] + dh_j * go[j] * (T(1) - tanh_c * tanh_c);
    const T c_before = cell_before != nullptr ? cell_before[j] : T(0);
    d_pre[j] = dc_j * gg[j] * gi[j] * (T(1) - gi[j]);
    d_pre[hidden + j] = dc_j * c_before * gf[j] * (T(1) - gf[j]);
    d_pre[2 * hidden + j] = dc_j * gi[j] * (T(1) - gg[j] * gg[j]);
    d_pre[3 * hidden + j] = dh_j * tanh_c * go[j] * (T(1) - go[j]);
    dc[j] = dc_j * gf[j];
  }
}

// Backpropagation through time, last step first; the pre-activation
// gradients of every step then give the weight and input gradients in a few
// big GEMMs (WriteRnnGradients). A missing output gradient means zero.
void LstmGradKernel(KernelContext& ctx) {
  const char* op = "lstm_grad";
  const RnnInputs in = CheckRnnKernelInputs(ctx, op, kLstmGates, true);
  const RnnDims& d = in.dims;
  const int64_t n_all = d.batch, steps = d.steps, hidden = d.hidden, width = d.gate_width();
  const DataType dtype = in.x->dtype();
  const Shape state_shape = {n_all, steps, hidden};
  const Tensor& out_t = RequiredRnnTensor(ctx, op, "Out", state_shape, dtype);
  const Tensor& cells_t = RequiredRnnTensor(ctx, op, "Cells", state_shape, dtype);
  const Tensor& gates_t = RequiredRnnTensor(ctx, op, "Gates", {n_all, steps, width}, dtype);
  const Tensor* d_out_t = OptionalRnnTensor(ctx, op, "Out@GRAD", state_shape, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    const T* cells = cells_t.data<T>();
    const T* gates = gates_t.data<T>();
    const T* d_out = d_out_t != nullptr ? d_out_t->data<T>() : nullptr;
    std::vector<T> dh = LastStateGradient<T>(ctx, op, "LastH@GRAD", d);
    std::vector<T> dc = LastStateGradient<T>(ctx, op, "LastC@GRAD", d);
    // Every row is written below (a padding row with zeros): no allocation and
    // clearing of an [N*T, 4H] buffer a step.
    T* d_pre = ThreadScratch<T, PreActivationTag>(n_all * steps * width);
    std::vector<T> step(static_cast<size_t>(n_all * width)), back(dh.size());
    std::vector<T> tanh_cell(static_cast<size_t>(hidden)), scratch(tanh_cell.size());
    for (int64_t t = steps - 1; t >= 0; --t) {
      for (int64_t n = 0; n < n_all; ++n) {
        T* step_n = step.data() + n * width;
        const int64_t row = n * steps + t;
        if (t >= in.lengths[static_cast<size_t>(n)]) {  // padding: gradients pass unchanged
          std::fill(step_n, step_n + width, T(0));
          std::fill(d_pre + row * width, d_pre + (row + 1) * width, T(0));
          continue;
        }
        std::copy(cells + row * hidden, cells + (row + 1) * hidden, tanh_cell.begin());
        TanhInPlace(tanh_cell.data(), hidden, scratch.data());
        LstmCellBackward<T>(hidden, gates + row * width, tanh_cell.data(),
                            t > 0 ? cells + (row - 1) * hidden : nullptr,
                            d_out != nullptr ? d_out + row * hidden : nullptr,
                            dh.data() + n * hidden, dc.data() + n * hidden, step_n);
        std::copy(step_n, step_n + width, d_pre + row * width);
      }
      if (t == 0) break;
      // dh_{t-1} = d_pre_t HiddenWeight^T, for the sequences that ran step t.
      Gemm<T>(false, true, n_all, hidden, width, T(1), step.data(), in.hidden_weight->data<T>(),
              T(0), back.data());
      for (int64_t n = 0; n < n_all; ++n) {
        if (t >= in.lengths[static_cast<size_t>(n)]) continue;
        std::copy(back.data() + n * hidden, back.data() + (n + 1) * hidden, dh.data() + n * hidden);
      }
    }
    WriteRnnGradients<T>(ctx, in, d_pre, d_pre, out_t.data<T>());
  });
}

void InferLstmShape(ShapeContext& ctx) {
  const RnnDims d = InferRnnInputs(ctx, "lstm", kLstmGates);
  const DataType dtype = ctx.InputType("X");
  ctx.SetOutput("Out", {d.batch, d.steps, d.hidden}, dtype);
  ctx.SetOutput("LastH", {d.batch, d.hidden}, dtype);
  ctx.SetOutput("LastC", {d.batch, d.hidden}, dtype);
  ctx.SetOutput("Gates", {d.batch, d.steps, d.gate_width()}, dtype);
  ctx.SetOutput("Cells", {d.batch, d.steps, d.hidden}, dtype);
}

void InferLstmGradShape(ShapeContext& ctx) { InferRnnGradShape(ctx, "lstm_grad", kLstmGates); }

std::vector<proto::OpDesc> LstmGrad(const proto::OpDesc& fwd) {
  return {RnnGradOp(fwd, "lstm_grad", {"Out", "Cells", "Gates"}, {"Out", "LastH", "LastC"})};
}

}  // namespace

RILL_REGISTER_OP(
    lstm,
    OpSchema("lstm")
        .Doc("An LSTM over padded sequences (gates i, f, g, o; zero initial state): Out holds "
             "h_t of every step, LastH and LastC the state after each sequence's last step.")
        .Input("X", "[N, T, D] float32 or float64, batch-major")
        .Input("InputWeight", "[D, 4H], the input's weights of gates i, f, g, o")
        .Input("HiddenWeight", "[H, 4H], the recurrent weights of gates i, f, g, o")
        .Input("Bias", "[4H], added to the gates' pre-activations")
        .Input("Length", "int64 [N], steps of each sequence (<= T); absent: T",
               kOptional | kNoGradient)
        .Output("Out", "[N, T, H], h_t; zero at steps past a sequence's length")
        .Output("LastH", "[N, H], h after each sequence's last step")
        .Output("LastC", "[N, H], c after each sequence's last step")
        .Output("Gates", "[N, T, 4H], the activated gates, for the gradient", kNoGradient)
        .Output("Cells", "[N, T, H], c_t, for the gradient", kNoGradient)
        .InferShape(InferLstmShape)
        .CpuKernel(LstmKernel)
        .Grad(LstmGrad));

RILL_REGISTER_OP(
    lstm_grad,
    OpSchema("lstm_grad")
        .Doc("Gradients of lstm with respect to X, the weights and the bias (through time).")
        .Input("X", "the forward X")
        .Input("InputWeight", "the forward InputWeight")
        .Input("HiddenWeight", "the forward HiddenWeight")
        .Input("Length", "the forward Length", kOptional | kNoGradient)
        .Input("Out", "the forward Out", kNoGradient)
        .Input("Cells", "the forward Cells", kNoGradient)
        .Input("Gates", "the forward Gates", kNoGradient)
        .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
        .Input("LastH@GRAD", "gradient of LastH; absent means zero", kOptional)
        .Input("LastC@GRAD", "gradient of LastC; absent means zero", kOptional)
        .Output("X@GRAD", "gradient of X", kOptional)
        .Output("InputWeight@GRAD", "gradient of InputWeight", kOptional)
        .Output("HiddenWeight@GRAD", "gradient of HiddenWeight", kOptional)
        .Output("Bias@GRAD", "gradient of Bias", kOptional)
        .InferShape(InferLstmGradShape)
        .CpuKernel(LstmGradKernel));

}  // namespace rill
