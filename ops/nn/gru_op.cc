// gru: a gated recurrent unit layer over whole padded sequences, fused into
// one op, and its gradient (backpropagation through time). PyTorch's
// formulation, gate order r, z, n, the reset gate applied to the recurrent
// product (so one GEMM per step serves all three gates), with one bias, on
// the input side (PyTorch's b_hn is zero here):
//
//   [xr xz xn] = x_t InputWeight + Bias,  [hr hz hn] = h_{t-1} HiddenWeight
//   r = sigmoid(xr + hr),  z = sigmoid(xz + hz),  n = tanh(xn + r * hn)
//   h_t = (1 - z) * n + z * h_{t-1},  h_{-1} = 0
//
// The input projections of all steps are one GEMM; each step is one GEMM
// with HiddenWeight and elementwise gate code. With Length, steps at
// t >= Length[n] leave sequence n's state unchanged and output zeros. Gates
// (r, z, n activated) and HiddenProduct (hn) are kept for the gradient.
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

// Tags of GruGradKernel's ThreadScratch buffers.
struct InputSideTag;
struct HiddenSideTag;

constexpr int kGruGates = 3;

// One step of one sequence: `gates` holds the input projection and becomes
// the activated gates r, z, n; `product` gets hn; h advances in place.
// The activations go over whole gate rows (SigmoidInPlace, TanhInPlace: the
// exps vectorized); `scratch` holds a row of gates.
template <class T>
void GruCellForward(int64_t hidden, const T* recurrent, T* gates, T* product, T* h, T* scratch) {
  T* gr = gates;
  T* gz = gates + hidden;
  T* gn = gates + 2 * hidden;
  const T* hn = recurrent + 2 * hidden;
  for (int64_t j = 0; j < 2 * hidden; ++j) gates[j] += recurrent[j];  // r and z
  SigmoidInPlace(gr, 2 * hidden, scratch);
  for (int64_t j = 0; j < hidden; ++j) gn[j] += gr[j] * hn[j];
  TanhInPlace(gn, hidden, scratch);
  for (int64_t j = 0; j < hidden; ++j) {
    product[j] = hn[j];
    h[j] = (T(1) - gz[j]) * gn[j] + gz[j] * h[j];
  }
}

void GruKernel(KernelContext& ctx) {
  const RnnInputs in = CheckRnnKernelInputs(ctx, "gru", kGruGates, false);
  const RnnDims& d = in.dims;
  const int64_t n_all = d.batch, steps = d.steps, hidden = d.hidden, width = d.gate_width();
  VisitFloatType(in.x->dtype(), [&]<class T>() {
    T* gates = ctx.Output("Gates")->Allocate<T>({n_all, steps, width});
    T* out = ctx.Output("Out")->Allocate<T>({n_all, steps, hidden});
    T* product = ctx.Output("HiddenProduct")->Allocate<T>({n_all, steps, hidden});
    ProjectInputs<T>(in, gates);
    const T* w_hidden = in.hidden_weight->data<T>();
    std::vector<T> h(static_cast<size_t>(n_all * hidden), T(0));
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
        if (t >= in.lengths[static_cast<size_t>(n)]) {  // padding: state kept, output zero
          std::fill(gates + row * width, gates + (row + 1) * width, T(0));
          std::fill(out + row * hidden, out + (row + 1) * hidden, T(0));
          std::fill(product + row * hidden, product + (row + 1) * hidden, T(0));
          continue;
        }
        GruCellForward<T>(hidden, recurrent.data() + n * width, gates + row * width,
                          product + row * hidden, hn, scratch.data());
        std::copy(hn, hn + hidden, out + row * hidden);
      }
    }
    std::copy(h.begin(), h.end(), ctx.Output("LastH")->Allocate<T>({n_all, hidden}));
  });
}

// One step of one sequence, backwards: from the gradient reaching h_t (dh,
// plus d_out when given), writes the pre-activation gradients of the input
// side (d_input) and of the recurrent side (d_hidden), and leaves in dh the
// part of h_{t-1}'s gradient that bypasses HiddenWeight (dh * z).
template <class T>
void GruCellBackward(int64_t hidden, const T* gates, const T* product, const T* h_before,
                     const T* d_out, T* dh, T* d_input, T* d_hidden) {
  const T* gr = gates;
  const T* gz = gates + hidden;
  const T* gn = gates + 2 * hidden;
  for (int64_t j = 0; j < hidden; ++j) {
    const T dh_j = d_out != nullptr ? dh[j] + d_out[j] : dh[j];
    const T h_j = h_before != nullptr ? h_before[j] : T(0);
    const T dn = dh_j * (T(1) - gz[j]) * (T(1) - gn[j] * gn[j]);
    const T dr = dn * product[j] * gr[j] * (T(1) - gr[j]);
    const T dz = dh_j * (h_j - gn[j]) * gz[j] * (T(1) - gz[j]);
    d_input[j] = d_hidden[j] = dr;
    d_input[hidden + j] = d_hidden[hidden + j] = dz;
    d_input[2 * hidden + j] = dn;
    d_hidden[2 * hidden + j] = dn * gr[j];
    dh[j] = dh_j * gz[j];
  }
}

// Backpropagation through time, last step first; the pre-activation
// gradients of every step then give the weight and input gradients in a few
// big GEMMs (WriteRnnGradients). A missing output gradient means zero.
void GruGradKernel(KernelContext& ctx) {
  const char* op = "gru_grad";
  const RnnInputs in = CheckRnnKernelInputs(ctx, op, kGruGates, true);
  const RnnDims& d = in.dims;
  const int64_t n_all = d.batch, steps = d.steps, hidden = d.hidden, width = d.gate_width();
  const DataType dtype = in.x->dtype();
  const Shape state_shape = {n_all, steps, hidden};
  const Tensor& out_t = RequiredRnnTensor(ctx, op, "Out", state_shape, dtype);
  const Tensor& product_t = RequiredRnnTensor(ctx, op, "HiddenProduct", state_shape, dtype);
  const Tensor& gates_t = RequiredRnnTensor(ctx, op, "Gates", {n_all, steps, width}, dtype);
  const Tensor* d_out_t = OptionalRnnTensor(ctx, op, "Out@GRAD", state_shape, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    const T* out = out_t.data<T>();
    const T* product = product_t.data<T>();
    const T* gates = gates_t.data<T>();
    const T* d_out = d_out_t != nullptr ? d_out_t->data<T>() : nullptr;
    std::vector<T> dh = LastStateGradient<T>(ctx, op, "LastH@GRAD", d);
    // Every row of both is written below (a padding row with zeros): no
    // allocation and clearing of two [N*T, 3H] buffers a step.
    T* d_input = ThreadScratch<T, InputSideTag>(n_all * steps * width);
    T* d_hidden = ThreadScratch<T, HiddenSideTag>(n_all * steps * width);
    std::vector<T> step(static_cast<size_t>(n_all * width)), back(dh.size());
    for (int64_t t = steps - 1; t >= 0; --t) {
      for (int64_t n = 0; n < n_all; ++n) {
        T* step_n = step.data() + n * width;
        const int64_t row = n * steps + t;
        if (t >= in.lengths[static_cast<size_t>(n)]) {  // padding: gradients pass unchanged
          std::fill(step_n, step_n + width, T(0));
          std::fill(d_input + row * width, d_input + (row + 1) * width, T(0));
          std::fill(d_hidden + row * width, d_hidden + (row + 1) * width, T(0));
          continue;
        }
        GruCellBackward<T>(hidden, gates + row * width, product + row * hidden,
                           t > 0 ? out + (row - 1) * hidden : nullptr,
                           d_out != nullptr ? d_out + row * hidden : nullptr,
                           dh.data() + n * hidden, d_input + row * width, step_n);
        std::copy(step_n, step_n + width, d_hidden + row * width);
      }
      if (t == 0) break;
      // dh_{t-1} += d_hidden_t HiddenWeight^T, for the sequences that ran step t.
      Gemm<T>(false, true, n_all, hidden, width, T(1), step.data(), in.hidden_weight->data<T>(),
              T(0), back.data());
      for (int64_t n = 0; n < n_all; ++n) {
        if (t >= in.lengths[static_cast<size_t>(n)]) continue;
        T* dh_n = dh.data() + n * hidden;
        const T* back_n = back.data() + n * hidden;
        for (int64_t j = 0; j < hidden; ++j) dh_n[j] += back_n[j];
      }
    }
    WriteRnnGradients<T>(ctx, in, d_input, d_hidden, out);
  });
}

void InferGruShape(ShapeContext& ctx) {
  const RnnDims d = InferRnnInputs(ctx, "gru", kGruGates);
  const DataType dtype = ctx.InputType("X");
  ctx.SetOutput("Out", {d.batch, d.steps, d.hidden}, dtype);
  ctx.SetOutput("LastH", {d.batch, d.hidden}, dtype);
  ctx.SetOutput("Gates", {d.batch, d.steps, d.gate_width()}, dtype);
  ctx.SetOutput("HiddenProduct", {d.batch, d.steps, d.hidden}, dtype);
}

void InferGruGradShape(ShapeContext& ctx) { InferRnnGradShape(ctx, "gru_grad", kGruGates); }

std::vector<proto::OpDesc> GruGrad(const proto::OpDesc& fwd) {
  return {RnnGradOp(fwd, "gru_grad", {"Out", "HiddenProduct", "Gates"}, {"Out", "LastH"})};
}

}  // namespace

RILL_REGISTER_OP(
    gru,
    OpSchema("gru")
        .Doc("A GRU over padded sequences (PyTorch's gates r, z, n, one input-side bias; zero "
             "initial state): Out holds h_t of every step, LastH the state after each "
             "sequence's last step.")
        .Input("X", "[N, T, D] float32 or float64, batch-major")
        .Input("InputWeight", "[D, 3H], the input's weights of gates r, z, n")
        .Input("HiddenWeight", "[H, 3H], the recurrent weights of gates r, z, n")
        .Input("Bias", "[3H], added to the input side of the gates' pre-activations")
        .Input("Length", "int64 [N], steps of each sequence (<= T); absent: T",
               kOptional | kNoGradient)
        .Output("Out", "[N, T, H], h_t; zero at steps past a sequence's length")
        .Output("LastH", "[N, H], h after each sequence's last step")
        .Output("Gates", "[N, T, 3H], the activated gates r, z, n, for the gradient", kNoGradient)
        .Output("HiddenProduct",
                "[N, T, H], hn = h_{t-1} HiddenWeight's n columns, for the "
                "gradient",
                kNoGradient)
        .InferShape(InferGruShape)
        .CpuKernel(GruKernel)
        .Grad(GruGrad));

RILL_REGISTER_OP(
    gru_grad,
    OpSchema("gru_grad")
        .Doc("Gradients of gru with respect to X, the weights and the bias (through time).")
        .Input("X", "the forward X")
        .Input("InputWeight", "the forward InputWeight")
        .Input("HiddenWeight", "the forward HiddenWeight")
        .Input("Length", "the forward Length", kOptional | kNoGradient)
        .Input("Out", "the forward Out", kNoGradient)
        .Input("HiddenProduct", "the forward HiddenProduct", kNoGradient)
        .Input("Gates", "the forward Gates", kNoGradient)
        .Input("Out@GRAD", "gradient of Out; absent means zero", kOptional)
        .Input("LastH@GRAD", "gradient of LastH; absent means zero", kOptional)
        .Output("X@GRAD", "gradient of X", kOptional)
        .Output("InputWeight@GRAD", "gradient of InputWeight", kOptional)
        .Output("HiddenWeight@GRAD", "gradient of HiddenWeight", kOptional)
        .Output("Bias@GRAD", "gradient of Bias", kOptional)
        .InferShape(InferGruGradShape)
        .CpuKernel(GruGradKernel));

}  // namespace rill
