// CUDA kernels of lookup_table, lookup_table_grad, dropout and dropout_grad:
// the CPU kernels' checks made on the host, outputs allocated on the op's
// device, work queued on the stream the executor is launching on
// (CudaStream::Current()); device code in embedding_dropout_cuda.cu.
//
// Every output is bit for bit what the CPU kernels give (lookup_table_op.cc,
// dropout_op.cc):
// - Ids are copied to the host (a wait on the stream) and checked there as
//   the CPU checks them, in the same order and with the same message, before
//   anything is launched: a device kernel cannot throw the CPU's error naming
//   the bad id.
// - The dense gradient adds repeated ids' rows in the CPU's order: the host
//   groups the ids by row (positions increasing), one device thread per
//   (row, column) adds its group left to right from 0.
// - Dropout's mask is drawn on the host from the op's own generator
//   (ctx.rng(), seeded by the executor the same way on every place and
//   advancing from run to run), with the CPU kernel's draws in the CPU's
//   order, then copied to the device: a model trained on cuda:0 drops what it
//   would drop on the CPU.
// - The sparse gradient (is_sparse) is selected rows as on the CPU: rows on
//   the host, their values a tensor on the op's device. Their consumers must
//   read device memory (the CUDA optimizers refuse selected rows for now).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/nn/embedding_dropout_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_desc.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

// -- host helpers ------------------------------------------------------------

// The ids on the host, copied on the current stream and waited for (Ids may
// have been written by work queued there). Checks that Ids is int64, as the
// CPU's ids.data<int64_t>() does.
std::vector<int64_t> IdsOnHost(const Tensor& ids, const char* op) {
  const int64_t* device_ids = ids.data<int64_t>();
  std::vector<int64_t> host(static_cast<size_t>(ids.numel()));
  if (host.empty()) return host;
  const cudaStream_t stream = CudaStream::Current();
  CheckCuda(cudaMemcpyAsync(host.data(), device_ids, host.size() * sizeof(int64_t),
                            cudaMemcpyDeviceToHost, stream),
            StrCat(op, ": Ids copy to the host"));
  CheckCuda(cudaStreamSynchronize(stream), StrCat(op, ": Ids copy to the host"));
  return host;
}

// Copies host values to device memory on the current stream and waits, so
// the host buffer may be freed once this returns.
void CopyToDeviceAndWait(void* device, const void* host, size_t bytes, const char* what) {
  if (bytes == 0) return;
  const cudaStream_t stream = CudaStream::Current();
  CheckCuda(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream),
            StrCat(what, ": copy to the device"));
  CheckCuda(cudaStreamSynchronize(stream), StrCat(what, ": copy to the device"));
}

// A device copy of host int64 values, queued on the current stream (not
// waited for: the caller waits for the stream before `host` or the copy is
// freed).
Tensor DeviceIndex(const std::vector<int64_t>& host, Place place, const char* what) {
  Tensor index(DataType::kInt64, {static_cast<int64_t>(host.size())}, place);
  if (host.empty()) return index;
  CheckCuda(
      cudaMemcpyAsync(index.mutable_data<int64_t>(), host.data(), host.size() * sizeof(int64_t),
                      cudaMemcpyHostToDevice, CudaStream::Current()),
      StrCat(what, ": copy to the device"));
  return index;
}

void ZeroOnDevice(Tensor* t, const char* what) {
  if (t->numel() == 0) return;
  CheckCuda(cudaMemsetAsync(t->raw_data(), 0, t->bytes(), CudaStream::Current()),
            StrCat(what, ": cudaMemsetAsync"));
}

// -- lookup_table ------------------------------------------------------------

// As lookup_table_op.cc: Ids [..., 1] gives Out [..., D]; Ids [N] gives Out [N, D].
Shape LookupOutShape(const Shape& ids, int64_t width) {
  Shape out = ids;
  if (out.size() >= 2) {
    out.back() = width;
  } else {
    out.push_back(width);
  }
  return out;
}

// lookup_table_op.cc's CheckTableAndIds, word for word.
void CheckTableAndIds(const Tensor& w, const Tensor& ids, int64_t padding_idx) {
  RILL_CHECK(w.rank() == 2, kInvalidArgument, "W must be [V, D], is ", w.Describe());
  RILL_CHECK(ids.rank() == 1 || (ids.rank() >= 2 && ids.dim(ids.rank() - 1) == 1), kInvalidArgument,
             "Ids must be [N, 1] or [N], is ", ids.Describe());
  RILL_CHECK(padding_idx < w.dim(0), kInvalidArgument, "padding_idx ", padding_idx,
             " is not a row of W ", ShapeToString(w.shape()));
}

bool IsPadding(int64_t id, int64_t padding_idx) { return id == padding_idx && padding_idx >= 0; }

// The CPU kernels' check of one id that is not padding.
void CheckId(int64_t i, int64_t id, int64_t rows) {
  RILL_CHECK(id >= 0 && id < rows, kInvalidArgument, "Ids row ", i, " is ", id,
             ", outside the table's rows [0, ", rows, ")");
}

void LookupTableCudaKernel(KernelContext& ctx) {
  const Tensor& w = ctx.Input("W");
  const Tensor& ids = ctx.Input("Ids");
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  CheckTableAndIds(w, ids, padding_idx);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(w.dtype(), [&]<class T>() {
    const T* table = w.data<T>();
    const int64_t* device_ids = ids.data<int64_t>();
    const int64_t rows = w.dim(0);
    const int64_t width = w.dim(1);
    const int64_t n = ids.numel();
    const Shape out_shape = LookupOutShape(ids.shape(), width);
    // Every id checked on the host before the launch, first to last (the
    // CPU's error names the first bad one).
    const std::vector<int64_t> id = IdsOnHost(ids, "lookup_table");
    for (int64_t i = 0; i < n; ++i) {
      if (!IsPadding(id[i], padding_idx)) CheckId(i, id[i], rows);
    }
    out->Allocate(DataTypeOf<T>(), out_shape, ctx.place());
    cuda::LookupRows(table, device_ids, n, width, padding_idx, out->mutable_data<T>(),
                     CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "lookup_table: kernel launch");
}

// One use of a table row: Out@GRAD row `position` goes into W@GRAD row `row`.
struct RowUse {
  int64_t row;
  int64_t position;
  bool operator<(const RowUse& other) const {
    return row != other.row ? row < other.row : position < other.position;
  }
};

// The dense gradient's work list, as the launcher reads it from one int64
// buffer: rows[groups] (each used row once), offsets[groups + 1] into
// positions, positions (each row's uses, increasing).
struct RowGroups {
  int64_t groups = 0;
  std::vector<int64_t> packed;
};

// Checks the ids as the CPU's gradient loop does (first to last, padding
// skipped) and groups their positions by row.
RowGroups GroupIdsByRow(const std::vector<int64_t>& id, int64_t rows, int64_t padding_idx) {
  std::vector<RowUse> uses;
  uses.reserve(id.size());
  for (size_t i = 0; i < id.size(); ++i) {
    if (IsPadding(id[i], padding_idx)) continue;
    CheckId(static_cast<int64_t>(i), id[i], rows);
    uses.push_back({id[i], static_cast<int64_t>(i)});
  }
  std::sort(uses.begin(), uses.end());
  std::vector<int64_t> used_rows;
  std::vector<int64_t> offsets;
  std::vector<int64_t> positions;
  positions.reserve(uses.size());
  for (size_t k = 0; k < uses.size(); ++k) {
    if (k == 0 || uses[k].row != uses[k - 1].row) {
      used_rows.push_back(uses[k].row);
      offsets.push_back(static_cast<int64_t>(k));
    }
    positions.push_back(uses[k].position);
  }
  offsets.push_back(static_cast<int64_t>(uses.size()));
  RowGroups result;
  result.groups = static_cast<int64_t>(used_rows.size());
  result.packed = std::move(used_rows);
  result.packed.insert(result.packed.end(), offsets.begin(), offsets.end());
  result.packed.insert(result.packed.end(), positions.begin(), positions.end());
  return result;
}

// With is_sparse, W@GRAD is selected rows: one row per id that is not
// padding (repeats kept), in the ids' order, holding that id's Out@GRAD row
// (zeros without Out@GRAD). Rows on the host, values on the op's device.
void SparseLookupTableGradCuda(KernelContext& ctx, const Tensor& w, const Tensor& ids,
                               int64_t padding_idx) {
  const int64_t width = w.dim(1);
  const std::vector<int64_t> id = IdsOnHost(ids, "lookup_table_grad");
  SelectedRows* dw = ctx.OutputRows("W@GRAD");
  dw->height = w.dim(0);
  dw->rows.clear();
  std::vector<int64_t> positions;
  for (size_t i = 0; i < id.size(); ++i) {
    if (IsPadding(id[i], padding_idx)) continue;
    CheckId(static_cast<int64_t>(i), id[i], w.dim(0));
    dw->rows.push_back(id[i]);
    positions.push_back(static_cast<int64_t>(i));
  }
  const bool has_dy = ctx.InputReady("Out@GRAD");
  VisitFloatType(w.dtype(), [&]<class T>() {
    const T* dy = has_dy ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const int64_t count = static_cast<int64_t>(positions.size());
    dw->value.Allocate(DataTypeOf<T>(), {count, width}, ctx.place());
    if (dy == nullptr) {
      ZeroOnDevice(&dw->value, "lookup_table_grad");
      return;
    }
    if (count == 0) return;
    const Tensor device_positions = DeviceIndex(positions, ctx.place(), "lookup_table_grad");
    const cudaStream_t stream = CudaStream::Current();
    cuda::GatherRows(dy, device_positions.data<int64_t>(), count, width,
                     dw->value.mutable_data<T>(), stream);
    CheckCuda(cudaGetLastError(), "lookup_table_grad: kernel launch");
    // `positions` (host) and `device_positions` are freed on return: wait for
    // the copy and the kernel that read them.
    CheckCuda(cudaStreamSynchronize(stream), "lookup_table_grad");
  });
}

// W@GRAD is dense: zeros, then each Out@GRAD row added into the row its id
// picked (ids may repeat). The padding row gets nothing. A missing Out@GRAD
// means zero (and the ids are not read, as on the CPU).
void LookupTableGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("W@GRAD")) return;
  const Tensor& w = ctx.Input("W");
  const Tensor& ids = ctx.Input("Ids");
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  CheckTableAndIds(w, ids, padding_idx);
  const bool has_dy = ctx.InputReady("Out@GRAD");
  if (has_dy) {
    const Tensor& dy = ctx.Input("Out@GRAD");
    RILL_CHECK(dy.numel() == ids.numel() * w.dim(1), kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(dy.shape()), ", want ",
               ShapeToString(LookupOutShape(ids.shape(), w.dim(1))));
  }
  if (ctx.Attr<bool>("is_sparse")) {
    SparseLookupTableGradCuda(ctx, w, ids, padding_idx);
    return;
  }
  Tensor* dw = ctx.Output("W@GRAD");
  VisitFloatType(w.dtype(), [&]<class T>() {
    const int64_t rows = w.dim(0);
    const int64_t width = w.dim(1);
    (void)ids.data<int64_t>();  // Ids must be int64, as on the CPU
    const T* dy = has_dy ? ctx.Input("Out@GRAD").data<T>() : nullptr;
    const Shape shape = w.shape();
    dw->Allocate(DataTypeOf<T>(), shape, ctx.place());
    ZeroOnDevice(dw, "lookup_table_grad");
    if (dy == nullptr) return;
    const RowGroups groups = GroupIdsByRow(IdsOnHost(ids, "lookup_table_grad"), rows, padding_idx);
    if (groups.groups == 0) return;
    const Tensor index = DeviceIndex(groups.packed, ctx.place(), "lookup_table_grad");
    const cudaStream_t stream = CudaStream::Current();
    const int64_t* used_rows = index.data<int64_t>();
    const int64_t* offsets = used_rows + groups.groups;
    const int64_t* positions = offsets + groups.groups + 1;
    cuda::SumRowsInOrder(dy, used_rows, offsets, positions, groups.groups, width,
                         dw->mutable_data<T>(), stream);
    CheckCuda(cudaGetLastError(), "lookup_table_grad: kernel launch");
    // `groups` (host) and `index` are freed on return: wait for the copy and
    // the kernel that read them.
    CheckCuda(cudaStreamSynchronize(stream), "lookup_table_grad");
  });
}

// -- dropout -----------------------------------------------------------------
// The mask is drawn as dropout_op.cc draws it (that file's SplitMix64,
// MaskValue and constants, copied: the CPU file keeps them to itself).

constexpr int kDrawBits = 21;
constexpr uint64_t kDrawMask = (uint64_t{1} << kDrawBits) - 1;

// SplitMix64 (Steele et al., 2014), started from one number of the op's
// mt19937_64 per run, exactly as on the CPU.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// `kept` when the 21-bit draw is at least threshold, else 0.
template <class T>
T MaskValue(uint64_t draw, uint64_t threshold, T kept) {
  const uint64_t dropped = (draw - threshold) >> 63;  // 1 when draw < threshold
  return kept * static_cast<T>(1 - dropped);
}

// The training mask of n elements, into host memory m: one number from the
// op's generator starts a SplitMix64 stream (taken even when n is 0, as on
// the CPU), each of its numbers gives three 21-bit draws, one per element.
template <class T>
void DrawDropoutMask(std::mt19937_64& generator, float p, bool upscale, T* m, int64_t n) {
  // An element is dropped when its draw is below threshold: P = threshold / 2^21 ~ p.
  const uint64_t threshold =
      static_cast<uint64_t>(std::llround(static_cast<double>(p) * (kDrawMask + 1)));
  const T kept = p >= 1.0f ? T(0) : (upscale ? T(1) / (T(1) - static_cast<T>(p)) : T(1));
  SplitMix64 rng(generator());
  int64_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint64_t r = rng.Next();
    m[i] = MaskValue(r & kDrawMask, threshold, kept);
    m[i + 1] = MaskValue((r >> kDrawBits) & kDrawMask, threshold, kept);
    m[i + 2] = MaskValue((r >> (2 * kDrawBits)) & kDrawMask, threshold, kept);
  }
  for (uint64_t r = rng.Next(); i < n; ++i, r >>= kDrawBits) {
    m[i] = MaskValue(r & kDrawMask, threshold, kept);
  }
}

// As dropout_op.cc: a missing attribute means upscale_in_train.
bool UpscaleInTrain(const proto::OpDesc& op) {
  const proto::Attr* attr = FindAttr(op, "dropout_implementation");
  return attr == nullptr || attr->s() == "upscale_in_train";
}

void DropoutCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const float p = ctx.Attr<float>("dropout_prob");
  const bool is_test = ctx.Attr<bool>("is_test");
  const bool upscale = UpscaleInTrain(ctx.op());
  Tensor* out = ctx.Output("Out");
  Tensor* mask = ctx.HasOutput("Mask") ? ctx.Output("Mask") : nullptr;
  RILL_CHECK(is_test || mask != nullptr, kInvalidArgument,
             "dropout in training (is_test=false) needs the Mask output");
  VisitFloatType(x.dtype(), [&]<class T>() {
    // X's pointer and shape are taken before Out is allocated (Out may be X).
    const T* in = x.data<T>();
    const Shape shape = x.shape();
    const int64_t n = x.numel();
    const cudaStream_t stream = CudaStream::Current();
    if (is_test) {
      // No draw from the generator at test time, as on the CPU.
      const T keep = upscale ? T(1) : static_cast<T>(1.0 - static_cast<double>(p));
      out->Allocate(DataTypeOf<T>(), shape, ctx.place());
      T* m = nullptr;
      if (mask != nullptr) {
        mask->Allocate(DataTypeOf<T>(), shape, ctx.place());
        m = mask->mutable_data<T>();
      }
      cuda::ScaleAndFillMask(in, keep, out->mutable_data<T>(), m, n, stream);
      return;
    }
    // Drawn on the host from the op's generator, as the CPU draws it, so
    // cuda:0 drops exactly the elements the CPU would; waited for before the
    // host mask is freed.
    std::vector<T> host_mask(static_cast<size_t>(n));
    DrawDropoutMask(ctx.rng(), p, upscale, host_mask.data(), n);
    mask->Allocate(DataTypeOf<T>(), shape, ctx.place());
    CopyToDeviceAndWait(mask->raw_data(), host_mask.data(), mask->bytes(), "dropout: Mask");
    out->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::MultiplyByMask(in, mask->data<T>(), out->mutable_data<T>(), n, stream);
  });
  CheckCuda(cudaGetLastError(), "dropout: kernel launch");
}

// X@GRAD = Out@GRAD * Mask. A missing Out@GRAD means zero.
void DropoutGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& mask = ctx.Input("Mask");
  const bool has_dy = ctx.InputReady("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(mask.dtype(), [&]<class T>() {
    const T* m = mask.data<T>();
    const Shape shape = mask.shape();
    const int64_t n = mask.numel();
    if (!has_dy) {
      dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
      ZeroOnDevice(dx, "dropout_grad");
      return;
    }
    const Tensor& dy_t = ctx.Input("Out@GRAD");
    RILL_CHECK(dy_t.shape() == mask.shape(), kInvalidArgument, "Out@GRAD has shape ",
               ShapeToString(dy_t.shape()), " but Mask has shape ", ShapeToString(mask.shape()));
    const T* dy = dy_t.data<T>();
    dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::MultiplyByMask(dy, m, dx->mutable_data<T>(), n, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "dropout_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(lookup_table, Cuda, LookupTableCudaKernel);
RILL_REGISTER_KERNEL(lookup_table_grad, Cuda, LookupTableGradCudaKernel);
RILL_REGISTER_KERNEL(dropout, Cuda, DropoutCudaKernel);
RILL_REGISTER_KERNEL(dropout_grad, Cuda, DropoutGradCudaKernel);

}  // namespace rill
