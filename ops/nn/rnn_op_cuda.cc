// CUDA kernels of lstm, gru and their gradients: the CPU kernels' checks
// made on the host (rnn_util.h; the lengths read there), outputs allocated on
// the op's device, work launched on the stream the executor is launching on
// (CudaStream::Current()). The same steps as the CPU kernels: one GEMM for
// every step's input projection, then per step a GEMM with HiddenWeight
// (cuBLAS) and one launch of the gate code (rnn_cuda.cu); backwards, the
// steps in reverse and the weight gradients in a few big GEMMs.
#include <vector>

#include "ops/math/gemm_cuda.h"
#include "ops/nn/rnn_cuda.h"
#include "ops/nn/rnn_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

constexpr int kLstmGates = 4;
constexpr int kGruGates = 3;

// The sequences' lengths on the device, copied before this returns (the host
// vector may go first).
Tensor DeviceLengths(const RnnInputs& in, Place place, const char* op) {
  Tensor lengths(DataType::kInt64, {in.dims.batch}, place);
  if (in.dims.batch == 0) return lengths;
  const cudaStream_t stream = CudaStream::Current();
  CheckCuda(cudaMemcpyAsync(lengths.mutable_data<int64_t>(), in.lengths.data(),
                            in.lengths.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream),
            StrCat(op, ": lengths to the device"));
  CheckCuda(cudaStreamSynchronize(stream), StrCat(op, ": lengths to the device"));
  return lengths;
}

// A device tensor of `shape` holding zeros, or a copy of `from` when given.
template <class T>
Tensor DeviceState(const Shape& shape, Place place, const Tensor* from, const char* op) {
  Tensor t(DataTypeOf<T>(), shape, place);
  if (t.numel() == 0) return t;
  const cudaStream_t stream = CudaStream::Current();
  if (from != nullptr) {
    CheckCuda(cudaMemcpyAsync(t.raw_data(), from->raw_data(), t.bytes(), cudaMemcpyDeviceToDevice,
                              stream),
              StrCat(op, ": cudaMemcpyAsync"));
  } else {
    CheckCuda(cudaMemsetAsync(t.raw_data(), 0, t.bytes(), stream), StrCat(op, ": cudaMemsetAsync"));
  }
  return t;
}

// Gates [N*T, G*H] = X InputWeight + Bias (rnn_util.h's ProjectInputs).
template <class T>
void ProjectInputsCuda(const RnnInputs& in, T* projected, const char* op) {
  const RnnDims& d = in.dims;
  const int64_t rows = d.batch * d.steps, width = d.gate_width();
  const cudaStream_t stream = CudaStream::Current();
  cuda::BiasRows(in.bias->data<T>(), projected, rows, width, stream);
  cuda::Gemm<T>(false, false, rows, width, d.input, T(1), in.x->data<T>(),
                in.input_weight->data<T>(), T(1), projected, stream, op);
}

// rnn_util.h's WriteRnnGradients on the device.
template <class T>
void WriteRnnGradientsCuda(KernelContext& ctx, const RnnInputs& in, const T* d_input,
                           const T* d_hidden, const T* out, const char* op) {
  const RnnDims& d = in.dims;
  const int64_t rows = d.batch * d.steps, width = d.gate_width();
  const cudaStream_t stream = CudaStream::Current();
  const Place place = ctx.place();
  if (ctx.HasOutput("X@GRAD")) {
    Tensor* dx = ctx.Output("X@GRAD");
    dx->Allocate(DataTypeOf<T>(), {d.batch, d.steps, d.input}, place);
    cuda::Gemm<T>(false, true, rows, d.input, width, T(1), d_input, in.input_weight->data<T>(),
                  T(0), dx->mutable_data<T>(), stream, op);
  }
  if (ctx.HasOutput("InputWeight@GRAD")) {
    Tensor* dw = ctx.Output("InputWeight@GRAD");
    dw->Allocate(DataTypeOf<T>(), {d.input, width}, place);
    cuda::Gemm<T>(true, false, d.input, width, rows, T(1), in.x->data<T>(), d_input, T(0),
                  dw->mutable_data<T>(), stream, op);
  }
  if (ctx.HasOutput("HiddenWeight@GRAD")) {
    Tensor before(DataTypeOf<T>(), {rows, d.hidden}, place);  // freed after the stream runs
    if (before.numel() > 0) {
      cuda::StatesBefore(out, before.mutable_data<T>(), d.batch, d.steps, d.hidden, stream);
    }
    Tensor* dw = ctx.Output("HiddenWeight@GRAD");
    dw->Allocate(DataTypeOf<T>(), {d.hidden, width}, place);
    cuda::Gemm<T>(true, false, d.hidden, width, rows, T(1), before.data<T>(), d_hidden, T(0),
                  dw->mutable_data<T>(), stream, op);
  }
  if (ctx.HasOutput("Bias@GRAD")) {
    Tensor* db = ctx.Output("Bias@GRAD");
    db->Allocate(DataTypeOf<T>(), {width}, place);
    if (width > 0) cuda::ColumnSums(d_input, db->mutable_data<T>(), rows, width, stream);
  }
}

// The state after the last step, copied out of the running one.
void CopyState(KernelContext& ctx, const char* slot, const Tensor& state, const char* op) {
  Tensor* out = ctx.Output(slot);
  out->Allocate(state.dtype(), state.shape(), ctx.place());
  if (state.numel() == 0) return;
  CheckCuda(cudaMemcpyAsync(out->raw_data(), state.raw_data(), state.bytes(),
                            cudaMemcpyDeviceToDevice, CudaStream::Current()),
            StrCat(op, ": cudaMemcpyAsync"));
}

template <class T>
Tensor* AllocateOutput(KernelContext& ctx, const char* slot, const Shape& shape) {
  Tensor* t = ctx.Output(slot);
  t->Allocate(DataTypeOf<T>(), shape, ctx.place());
  return t;
}

// The forward recurrence: the input projections into `gates`, then for
// each step t the recurrent product h HiddenWeight (zero at t = 0) and
// `step(t, recurrent)`, which advances h.
template <class T, class Step>
void ForwardRecurrence(const RnnInputs& in, T* gates, const Tensor& h, Tensor* recurrent,
                       const char* op, Step step) {
  const RnnDims& d = in.dims;
  if (d.batch * d.steps * d.gate_width() == 0) return;
  const cudaStream_t stream = CudaStream::Current();
  ProjectInputsCuda<T>(in, gates, op);
  for (int64_t t = 0; t < d.steps; ++t) {
    if (t > 0) {
      cuda::Gemm<T>(false, false, d.batch, d.gate_width(), d.hidden, T(1), h.data<T>(),
                    in.hidden_weight->data<T>(), T(0), recurrent->mutable_data<T>(), stream, op);
    }
    step(t, recurrent->data<T>());
  }
}

// Backpropagation through time: for each step t, last first, `step(t,
// recurrent)` writes the step's recurrent-side gradients into `recurrent`
// ([N, G*H]); then, but for t = 0, dh of the sequences that ran step t takes
// recurrent HiddenWeight^T (replacing dh, or added to it with `add`).
template <class T, class Step>
void BackwardRecurrence(const RnnInputs& in, const Tensor& lengths, Tensor* dh, bool add,
                        const char* op, Step step) {
  const RnnDims& d = in.dims;
  if (d.batch * d.hidden == 0) return;
  const Place place = dh->place();
  const cudaStream_t stream = CudaStream::Current();
  Tensor recurrent(DataTypeOf<T>(), {d.batch, d.gate_width()}, place);
  Tensor back(DataTypeOf<T>(), {d.batch, d.hidden}, place);
  for (int64_t t = d.steps - 1; t >= 0; --t) {
    step(t, recurrent.mutable_data<T>());
    if (t == 0) break;
    cuda::Gemm<T>(false, true, d.batch, d.hidden, d.gate_width(), T(1), recurrent.data<T>(),
                  in.hidden_weight->data<T>(), T(0), back.mutable_data<T>(), stream, op);
    cuda::TakeRecurrentGradient<T>(lengths.data<int64_t>(), d.batch, d.hidden, t, back.data<T>(),
                                   dh->mutable_data<T>(), add, stream);
  }
}

void LstmCudaKernel(KernelContext& ctx) {
  const char* op = "lstm";
  const RnnInputs in = CheckRnnKernelInputs(ctx, op, kLstmGates, false);
  const RnnDims& d = in.dims;
  const int64_t n_all = d.batch, steps = d.steps, hidden = d.hidden, width = d.gate_width();
  VisitFloatType(in.x->dtype(), [&]<class T>() {
    T* gates = AllocateOutput<T>(ctx, "Gates", {n_all, steps, width})->template mutable_data<T>();
    T* out = AllocateOutput<T>(ctx, "Out", {n_all, steps, hidden})->template mutable_data<T>();
    T* cells = AllocateOutput<T>(ctx, "Cells", {n_all, steps, hidden})->template mutable_data<T>();
    const Place place = ctx.place();
    const cudaStream_t stream = CudaStream::Current();
    const Tensor lengths = DeviceLengths(in, place, op);
    Tensor h = DeviceState<T>({n_all, hidden}, place, nullptr, op);
    Tensor c = DeviceState<T>({n_all, hidden}, place, nullptr, op);
    Tensor recurrent = DeviceState<T>({n_all, width}, place, nullptr, op);  // zero at t = 0
    ForwardRecurrence<T>(in, gates, h, &recurrent, op, [&](int64_t t, const T* rec) {
      cuda::LstmForwardStep<T>(lengths.data<int64_t>(), n_all, steps, hidden, t, rec, gates, out,
                               cells, h.mutable_data<T>(), c.mutable_data<T>(), stream);
    });
    CopyState(ctx, "LastH", h, op);
    CopyState(ctx, "LastC", c, op);
  });
  CheckCuda(cudaGetLastError(), "lstm: kernel launch");
}

void LstmGradCudaKernel(KernelContext& ctx) {
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
  const Shape last = {n_all, hidden};
  const Tensor* d_last_h = OptionalRnnTensor(ctx, op, "LastH@GRAD", last, dtype);
  const Tensor* d_last_c = OptionalRnnTensor(ctx, op, "LastC@GRAD", last, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    const Place place = ctx.place();
    const cudaStream_t stream = CudaStream::Current();
    const Tensor lengths = DeviceLengths(in, place, op);
    Tensor dh = DeviceState<T>(last, place, d_last_h, op);
    Tensor dc = DeviceState<T>(last, place, d_last_c, op);
    Tensor d_pre(dtype, {n_all * steps, width}, place);  // every row written below
    const T* d_out = d_out_t != nullptr ? d_out_t->data<T>() : nullptr;
    BackwardRecurrence<T>(in, lengths, &dh, false, op, [&](int64_t t, T* step) {
      cuda::LstmBackwardStep<T>(lengths.data<int64_t>(), n_all, steps, hidden, t, gates_t.data<T>(),
                                cells_t.data<T>(), d_out, dh.mutable_data<T>(),
                                dc.mutable_data<T>(), d_pre.mutable_data<T>(), step, stream);
    });
    WriteRnnGradientsCuda<T>(ctx, in, d_pre.data<T>(), d_pre.data<T>(), out_t.data<T>(), op);
  });
  CheckCuda(cudaGetLastError(), "lstm_grad: kernel launch");
}

void GruCudaKernel(KernelContext& ctx) {
  const char* op = "gru";
  const RnnInputs in = CheckRnnKernelInputs(ctx, op, kGruGates, false);
  const RnnDims& d = in.dims;
  const int64_t n_all = d.batch, steps = d.steps, hidden = d.hidden, width = d.gate_width();
  VisitFloatType(in.x->dtype(), [&]<class T>() {
    T* gates = AllocateOutput<T>(ctx, "Gates", {n_all, steps, width})->template mutable_data<T>();
    T* out = AllocateOutput<T>(ctx, "Out", {n_all, steps, hidden})->template mutable_data<T>();
    T* product =
        AllocateOutput<T>(ctx, "HiddenProduct", {n_all, steps, hidden})->template mutable_data<T>();
    const Place place = ctx.place();
    const cudaStream_t stream = CudaStream::Current();
    const Tensor lengths = DeviceLengths(in, place, op);
    Tensor h = DeviceState<T>({n_all, hidden}, place, nullptr, op);
    Tensor recurrent = DeviceState<T>({n_all, width}, place, nullptr, op);  // zero at t = 0
    ForwardRecurrence<T>(in, gates, h, &recurrent, op, [&](int64_t t, const T* rec) {
      cuda::GruForwardStep<T>(lengths.data<int64_t>(), n_all, steps, hidden, t, rec, gates, out,
                              product, h.mutable_data<T>(), stream);
    });
    CopyState(ctx, "LastH", h, op);
  });
  CheckCuda(cudaGetLastError(), "gru: kernel launch");
}

void GruGradCudaKernel(KernelContext& ctx) {
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
  const Shape last = {n_all, hidden};
  const Tensor* d_last_h = OptionalRnnTensor(ctx, op, "LastH@GRAD", last, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    const Place place = ctx.place();
    const cudaStream_t stream = CudaStream::Current();
    const Tensor lengths = DeviceLengths(in, place, op);
    Tensor dh = DeviceState<T>(last, place, d_last_h, op);
    Tensor d_input(dtype, {n_all * steps, width}, place);  // every row written below
    Tensor d_hidden(dtype, {n_all * steps, width}, place);
    const T* d_out = d_out_t != nullptr ? d_out_t->data<T>() : nullptr;
    BackwardRecurrence<T>(in, lengths, &dh, true, op, [&](int64_t t, T* step) {
      cuda::GruBackwardStep<T>(lengths.data<int64_t>(), n_all, steps, hidden, t, gates_t.data<T>(),
                               product_t.data<T>(), out_t.data<T>(), d_out, dh.mutable_data<T>(),
                               d_input.mutable_data<T>(), d_hidden.mutable_data<T>(), step, stream);
    });
    WriteRnnGradientsCuda<T>(ctx, in, d_input.data<T>(), d_hidden.data<T>(), out_t.data<T>(), op);
  });
  CheckCuda(cudaGetLastError(), "gru_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(lstm, Cuda, LstmCudaKernel);
RILL_REGISTER_KERNEL(lstm_grad, Cuda, LstmGradCudaKernel);
RILL_REGISTER_KERNEL(gru, Cuda, GruCudaKernel);
RILL_REGISTER_KERNEL(gru_grad, Cuda, GruGradCudaKernel);

}  // namespace rill
