// Device code of the fused recurrent ops (rnn_cuda.h): one thread per
// (sequence, unit) of a step, grid-stride loops, each value rounded as the
// CPU kernels round it (cuda_device_math.cuh: no FMA contraction).
#include "ops/cuda_device_math.cuh"
#include "ops/nn/rnn_cuda.h"

namespace rill::cuda {
namespace {

// rnn_util.h's SigmoidOf and TanhOf (tanh through one exp).
template <class T>
__device__ __forceinline__ T RnnSigmoid(T x) {
  return Div(T(1), Add(T(1), ExpOf(-x)));
}
template <class T>
__device__ __forceinline__ T RnnTanh(T x) {
  return Sub(Div(T(2), Add(T(1), ExpOf(Mul(T(-2), x)))), T(1));
}

#define RILL_GRID_LOOP(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

template <class T>
__global__ void BiasRowsKernel(const T* bias, T* out, int64_t rows, int64_t width) {
  RILL_GRID_LOOP(i, rows * width) { out[i] = bias[i % width]; }
}

template <class T>
__global__ void LstmForwardKernel(const int64_t* lengths, int64_t batch, int64_t steps,
                                  int64_t hidden, int64_t t, const T* recurrent, T* gates, T* out,
                                  T* cells, T* h, T* c) {
  RILL_GRID_LOOP(i, batch * hidden) {
    const int64_t n = i / hidden, j = i % hidden;
    const int64_t row = n * steps + t, width = 4 * hidden;
    T* g = gates + row * width;
    if (t >= lengths[n]) {  // padding: state kept, output zero
      for (int k = 0; k < 4; ++k) g[k * hidden + j] = T(0);
      out[row * hidden + j] = T(0);
      cells[row * hidden + j] = c[i];
      continue;
    }
    const T* rec = recurrent + n * width;
    const T gi = RnnSigmoid(Add(g[j], rec[j]));
    const T gf = RnnSigmoid(Add(g[hidden + j], rec[hidden + j]));
    const T gg = RnnTanh(Add(g[2 * hidden + j], rec[2 * hidden + j]));
    const T go = RnnSigmoid(Add(g[3 * hidden + j], rec[3 * hidden + j]));
    const T cell = Add(Mul(gf, c[i]), Mul(gi, gg));
    const T state = Mul(go, RnnTanh(cell));
    g[j] = gi;
    g[hidden + j] = gf;
    g[2 * hidden + j] = gg;
    g[3 * hidden + j] = go;
    c[i] = cell;
    h[i] = state;
    out[row * hidden + j] = state;
    cells[row * hidden + j] = cell;
  }
}

template <class T>
__global__ void LstmBackwardKernel(const int64_t* lengths, int64_t batch, int64_t steps,
                                   int64_t hidden, int64_t t, const T* gates, const T* cells,
                                   const T* d_out, T* dh, T* dc, T* d_pre, T* step) {
  RILL_GRID_LOOP(i, batch * hidden) {
    const int64_t n = i / hidden, j = i % hidden;
    const int64_t row = n * steps + t, width = 4 * hidden;
    T* pre = d_pre + row * width;
    T* st = step + n * width;
    if (t >= lengths[n]) {  // padding: gradients pass unchanged
      for (int k = 0; k < 4; ++k) pre[k * hidden + j] = st[k * hidden + j] = T(0);
      continue;
    }
    const T* g = gates + row * width;
    const T gi = g[j], gf = g[hidden + j], gg = g[2 * hidden + j], go = g[3 * hidden + j];
    const T dh_j = d_out != nullptr ? Add(dh[i], d_out[row * hidden + j]) : dh[i];
    const T tanh_c = RnnTanh(cells[row * hidden + j]);
    const T dc_j = Add(dc[i], Mul(Mul(dh_j, go), Sub(T(1), Mul(tanh_c, tanh_c))));
    const T c_before = t > 0 ? cells[(row - 1) * hidden + j] : T(0);
    const T d_i = Mul(Mul(Mul(dc_j, gg), gi), Sub(T(1), gi));
    const T d_f = Mul(Mul(Mul(dc_j, c_before), gf), Sub(T(1), gf));
    const T d_g = Mul(Mul(dc_j, gi), Sub(T(1), Mul(gg, gg)));
    const T d_o = Mul(Mul(Mul(dh_j, tanh_c), go), Sub(T(1), go));
    pre[j] = st[j] = d_i;
    pre[hidden + j] = st[hidden + j] = d_f;
    pre[2 * hidden + j] = st[2 * hidden + j] = d_g;
    pre[3 * hidden + j] = st[3 * hidden + j] = d_o;
    dc[i] = Mul(dc_j, gf);
  }
}

template <class T>
__global__ void GruForwardKernel(const int64_t* lengths, int64_t batch, int64_t steps,
                                 int64_t hidden, int64_t t, const T* recurrent, T* gates, T* out,
                                 T* product, T* h) {
  RILL_GRID_LOOP(i, batch * hidden) {
    const int64_t n = i / hidden, j = i % hidden;
    const int64_t row = n * steps + t, width = 3 * hidden;
    T* g = gates + row * width;
    if (t >= lengths[n]) {  // padding: state kept, output zero
      for (int k = 0; k < 3; ++k) g[k * hidden + j] = T(0);
      out[row * hidden + j] = T(0);
      product[row * hidden + j] = T(0);
      continue;
    }
    const T* rec = recurrent + n * width;
    const T hn = rec[2 * hidden + j];
    const T gr = RnnSigmoid(Add(g[j], rec[j]));
    const T gz = RnnSigmoid(Add(g[hidden + j], rec[hidden + j]));
    const T gn = RnnTanh(Add(g[2 * hidden + j], Mul(gr, hn)));
    const T state = Add(Mul(Sub(T(1), gz), gn), Mul(gz, h[i]));
    g[j] = gr;
    g[hidden + j] = gz;
    g[2 * hidden + j] = gn;
    product[row * hidden + j] = hn;
    h[i] = state;
    out[row * hidden + j] = state;
  }
}

template <class T>
__global__ void GruBackwardKernel(const int64_t* lengths, int64_t batch, int64_t steps,
                                  int64_t hidden, int64_t t, const T* gates, const T* product,
                                  const T* out, const T* d_out, T* dh, T* d_input, T* d_hidden,
                                  T* step) {
  RILL_GRID_LOOP(i, batch * hidden) {
    const int64_t n = i / hidden, j = i % hidden;
    const int64_t row = n * steps + t, width = 3 * hidden;
    T* din = d_input + row * width;
    T* dhid = d_hidden + row * width;
    T* st = step + n * width;
    if (t >= lengths[n]) {  // padding: gradients pass unchanged
      for (int k = 0; k < 3; ++k)
        din[k * hidden + j] = dhid[k * hidden + j] = st[k * hidden + j] = T(0);
      continue;
    }
    const T* g = gates + row * width;
    const T gr = g[j], gz = g[hidden + j], gn = g[2 * hidden + j];
    const T dh_j = d_out != nullptr ? Add(dh[i], d_out[row * hidden + j]) : dh[i];
    const T h_j = t > 0 ? out[(row - 1) * hidden + j] : T(0);
    const T dn = Mul(Mul(dh_j, Sub(T(1), gz)), Sub(T(1), Mul(gn, gn)));
    const T dr = Mul(Mul(Mul(dn, product[row * hidden + j]), gr), Sub(T(1), gr));
    const T dz = Mul(Mul(Mul(dh_j, Sub(h_j, gn)), gz), Sub(T(1), gz));
    din[j] = dhid[j] = st[j] = dr;
    din[hidden + j] = dhid[hidden + j] = st[hidden + j] = dz;
    din[2 * hidden + j] = dn;
    dhid[2 * hidden + j] = st[2 * hidden + j] = Mul(dn, gr);
    dh[i] = Mul(dh_j, gz);
  }
}

template <class T>
__global__ void TakeRecurrentGradientKernel(const int64_t* lengths, int64_t batch, int64_t hidden,
                                            int64_t t, const T* back, T* dh, bool add) {
  RILL_GRID_LOOP(i, batch * hidden) {
    if (t >= lengths[i / hidden]) continue;
    dh[i] = add ? Add(dh[i], back[i]) : back[i];
  }
}

template <class T>
__global__ void StatesBeforeKernel(const T* out, T* before, int64_t batch, int64_t steps,
                                   int64_t hidden) {
  RILL_GRID_LOOP(i, batch * steps * hidden) {
    const int64_t t = (i / hidden) % steps;
    before[i] = t == 0 ? T(0) : out[i - hidden];
  }
}

template <class T>
__global__ void ColumnSumsKernel(const T* m, T* sums, int64_t rows, int64_t width) {
  RILL_GRID_LOOP(j, width) {
    T sum = T(0);
    for (int64_t r = 0; r < rows; ++r) sum = Add(sum, m[r * width + j]);
    sums[j] = sum;
  }
}

#undef RILL_GRID_LOOP

}  // namespace

template <class T>
void BiasRows(const T* bias, T* out, int64_t rows, int64_t width, cudaStream_t stream) {
  BiasRowsKernel<<<Blocks(rows * width), kThreads, 0, stream>>>(bias, out, rows, width);
}

template <class T>
void LstmForwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden,
                     int64_t t, const T* recurrent, T* gates, T* out, T* cells, T* h, T* c,
                     cudaStream_t stream) {
  LstmForwardKernel<<<Blocks(batch * hidden), kThreads, 0, stream>>>(
      lengths, batch, steps, hidden, t, recurrent, gates, out, cells, h, c);
}

template <class T>
void LstmBackwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden,
                      int64_t t, const T* gates, const T* cells, const T* d_out, T* dh, T* dc,
                      T* d_pre, T* step, cudaStream_t stream) {
  LstmBackwardKernel<<<Blocks(batch * hidden), kThreads, 0, stream>>>(
      lengths, batch, steps, hidden, t, gates, cells, d_out, dh, dc, d_pre, step);
}

template <class T>
void GruForwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden, int64_t t,
                    const T* recurrent, T* gates, T* out, T* product, T* h, cudaStream_t stream) {
  GruForwardKernel<<<Blocks(batch * hidden), kThreads, 0, stream>>>(
      lengths, batch, steps, hidden, t, recurrent, gates, out, product, h);
}

template <class T>
void GruBackwardStep(const int64_t* lengths, int64_t batch, int64_t steps, int64_t hidden,
                     int64_t t, const T* gates, const T* product, const T* out, const T* d_out,
                     T* dh, T* d_input, T* d_hidden, T* step, cudaStream_t stream) {
  GruBackwardKernel<<<Blocks(batch * hidden), kThreads, 0, stream>>>(
      lengths, batch, steps, hidden, t, gates, product, out, d_out, dh, d_input, d_hidden, step);
}

template <class T>
void TakeRecurrentGradient(const int64_t* lengths, int64_t batch, int64_t hidden, int64_t t,
                           const T* back, T* dh, bool add, cudaStream_t stream) {
  TakeRecurrentGradientKernel<<<Blocks(batch * hidden), kThreads, 0, stream>>>(
      lengths, batch, hidden, t, back, dh, add);
}

template <class T>
void StatesBefore(const T* out, T* before, int64_t batch, int64_t steps, int64_t hidden,
                  cudaStream_t stream) {
  StatesBeforeKernel<<<Blocks(batch * steps * hidden), kThreads, 0, stream>>>(out, before, batch,
                                                                              steps, hidden);
}

template <class T>
void ColumnSums(const T* m, T* sums, int64_t rows, int64_t width, cudaStream_t stream) {
  ColumnSumsKernel<<<Blocks(width), kThreads, 0, stream>>>(m, sums, rows, width);
}

#define RILL_RNN_CUDA_INSTANTIATE(T)                                                              \
  template void BiasRows<T>(const T*, T*, int64_t, int64_t, cudaStream_t);                        \
  template void LstmForwardStep<T>(const int64_t*, int64_t, int64_t, int64_t, int64_t, const T*,  \
                                   T*, T*, T*, T*, T*, cudaStream_t);                             \
  template void LstmBackwardStep<T>(const int64_t*, int64_t, int64_t, int64_t, int64_t, const T*, \
                                    const T*, const T*, T*, T*, T*, T*, cudaStream_t);            \
  template void GruForwardStep<T>(const int64_t*, int64_t, int64_t, int64_t, int64_t, const T*,   \
                                  T*, T*, T*, T*, cudaStream_t);                                  \
  template void GruBackwardStep<T>(const int64_t*, int64_t, int64_t, int64_t, int64_t, const T*,  \
                                   const T*, const T*, const T*, T*, T*, T*, T*, cudaStream_t);   \
  template void TakeRecurrentGradient<T>(const int64_t*, int64_t, int64_t, int64_t, const T*, T*, \
                                         bool, cudaStream_t);                                     \
  template void StatesBefore<T>(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);           \
  template void ColumnSums<T>(const T*, T*, int64_t, int64_t, cudaStream_t);
RILL_RNN_CUDA_INSTANTIATE(float)
RILL_RNN_CUDA_INSTANTIATE(double)
#undef RILL_RNN_CUDA_INSTANTIATE

}  // namespace rill::cuda
