// CUDA kernels of lookup_table, lookup_table_grad, dropout and dropout_grad:
// the CPU kernels' checks made on the host, outputs allocated on the op's
// device, work queued on the stream the executor is launching on
// (CudaStream::Current()); device code in embedding_dropout_cuda.cu.
//
// Every output is bit for bit what the CPU kernels give (lookup_table_op.cc,
// dropout_op.cc), whose host code they share (lookup_table_util.h,
// dropout_util.h):
// - Ids are copied to the host (a wait on the stream) and checked there by
//   the CPU's checks, in the same order and with the same message, before
//   anything is launched: a device kernel cannot throw the CPU's error naming
//   the bad id.
// - The dense gradient adds repeated ids' rows in the CPU's order: the host
//   groups the ids by row (positions increasing), one device thread per
//   (row, column) adds its group left to right from 0.
// - Dropout's mask is drawn on the host from the op's own generator
//   (ctx.rng(), seeded by the executor the same way on every place and
//   advancing from run to run) by the CPU kernel's code, then copied to the
//   device: a model trained on cuda:0 drops what it would drop on the CPU.
// - The sparse gradient (is_sparse) is selected rows as on the CPU: rows on
//   the host, their values a tensor on the op's device. Their consumers must
//   read device memory (the CUDA optimizers refuse selected rows for now).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/nn/dropout_util.h"
#include "ops/nn/embedding_dropout_cuda.h"
#include "ops/nn/lookup_table_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

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

void LookupTableCudaKernel(KernelContext& ctx) {
  const LookupArgs args = ReadLookupArgs(ctx);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(args.w.dtype(), [&]<class T>() {
    const T* table = args.w.data<T>();
    const int64_t* device_ids = args.ids.data<int64_t>();
    const int64_t n = args.ids.numel();
    const int64_t width = args.w.dim(1);
    const Shape out_shape = LookupOutShape(args.ids.shape(), width);
    // Every id checked on the host before the launch, first to last (the
    // CPU's error names the first bad one).
    const std::vector<int64_t> id = IdsOnHost(args.ids, "lookup_table");
    for (int64_t i = 0; i < n; ++i) {
      if (!IsPaddingId(id[i], args.padding_idx)) CheckId(i, id[i], args.w.dim(0));
    }
    out->Allocate(DataTypeOf<T>(), out_shape, ctx.place());
    cuda::LookupRows(table, device_ids, n, width, args.padding_idx, out->mutable_data<T>(),
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
  const std::vector<int64_t> looked_up =
      LookedUpPositions(id.data(), static_cast<int64_t>(id.size()), rows, padding_idx);
  std::vector<RowUse> uses;
  uses.reserve(looked_up.size());
  for (int64_t i : looked_up) uses.push_back({id[static_cast<size_t>(i)], i});
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
// (zeros without `dy`). Rows on the host, values on the op's device.
void SparseLookupTableGradCuda(KernelContext& ctx, const LookupArgs& args, const Tensor* dy_t) {
  const std::vector<int64_t> id = IdsOnHost(args.ids, "lookup_table_grad");
  SelectedRows* dw = ctx.OutputRows("W@GRAD");
  const std::vector<int64_t> positions = SetLookedUpRows(id.data(), args, dw);
  VisitFloatType(args.w.dtype(), [&]<class T>() {
    const T* dy = dy_t != nullptr ? dy_t->data<T>() : nullptr;
    const int64_t count = static_cast<int64_t>(positions.size());
    dw->value.Allocate(DataTypeOf<T>(), {count, args.w.dim(1)}, ctx.place());
    if (dy == nullptr) {
      ZeroOnDevice(&dw->value, "lookup_table_grad");
      return;
    }
    if (count == 0) return;
    const Tensor device_positions = DeviceIndex(positions, ctx.place(), "lookup_table_grad");
    const cudaStream_t stream = CudaStream::Current();
    cuda::GatherRows(dy, device_positions.data<int64_t>(), count, args.w.dim(1),
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
void DenseLookupTableGradCuda(KernelContext& ctx, const LookupArgs& args, const Tensor* dy_t) {
  const Tensor& w = args.w;
  Tensor* dw = ctx.Output("W@GRAD");
  VisitFloatType(w.dtype(), [&]<class T>() {
    (void)args.ids.data<int64_t>();  // Ids must be int64, as on the CPU
    const T* dy = dy_t != nullptr ? dy_t->data<T>() : nullptr;
    const Shape shape = w.shape();
    dw->Allocate(DataTypeOf<T>(), shape, ctx.place());
    ZeroOnDevice(dw, "lookup_table_grad");
    if (dy == nullptr) return;
    const RowGroups groups =
        GroupIdsByRow(IdsOnHost(args.ids, "lookup_table_grad"), w.dim(0), args.padding_idx);
    if (groups.groups == 0) return;
    const Tensor index = DeviceIndex(groups.packed, ctx.place(), "lookup_table_grad");
    const cudaStream_t stream = CudaStream::Current();
    const int64_t* used_rows = index.data<int64_t>();
    const int64_t* offsets = used_rows + groups.groups;
    const int64_t* positions = offsets + groups.groups + 1;
    cuda::SumRowsInOrder(dy, used_rows, offsets, positions, groups.groups, w.dim(1),
                         dw->mutable_data<T>(), stream);
    CheckCuda(cudaGetLastError(), "lookup_table_grad: kernel launch");
    // `groups` (host) and `index` are freed on return: wait for the copy and
    // the kernel that read them.
    CheckCuda(cudaStreamSynchronize(stream), "lookup_table_grad");
  });
}

void LookupTableGradCudaKernel(KernelContext& ctx) {
  RunLookupTableGrad(ctx, SparseLookupTableGradCuda, DenseLookupTableGradCuda);
}

// -- dropout -----------------------------------------------------------------

void DropoutCudaKernel(KernelContext& ctx) {
  const DropoutArgs args = ReadDropoutArgs(ctx);
  VisitFloatType(args.x.dtype(), [&]<class T>() {
    // X's pointer and shape are taken before Out is allocated (Out may be X).
    const T* in = args.x.data<T>();
    const Shape shape = args.x.shape();
    const int64_t n = args.x.numel();
    const cudaStream_t stream = CudaStream::Current();
    if (args.is_test) {
      // No draw from the generator at test time, as on the CPU.
      const T keep = DropoutTestScale<T>(args.p, args.upscale);
      args.out->Allocate(DataTypeOf<T>(), shape, ctx.place());
      T* m = nullptr;
      if (args.mask != nullptr) {
        args.mask->Allocate(DataTypeOf<T>(), shape, ctx.place());
        m = args.mask->mutable_data<T>();
      }
      cuda::ScaleAndFillMask(in, keep, args.out->mutable_data<T>(), m, n, stream);
      return;
    }
    // Drawn on the host from the op's generator by the CPU's code, so cuda:0
    // drops exactly the elements the CPU would; waited for before the host
    // mask is freed.
    std::vector<T> host_mask(static_cast<size_t>(n));
    DrawDropoutMask(ctx.rng(), args.p, args.upscale, host_mask.data(), n);
    args.mask->Allocate(DataTypeOf<T>(), shape, ctx.place());
    CopyToDeviceAndWait(args.mask->raw_data(), host_mask.data(), args.mask->bytes(),
                        "dropout: Mask");
    args.out->Allocate(DataTypeOf<T>(), shape, ctx.place());
    cuda::MultiplyByMask(in, args.mask->data<T>(), args.out->mutable_data<T>(), n, stream);
  });
  CheckCuda(cudaGetLastError(), "dropout: kernel launch");
}

// X@GRAD = Out@GRAD * Mask. A missing Out@GRAD means zero.
void DropoutGradCudaKernel(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const DropoutGradArgs a = ReadDropoutGradArgs(ctx);
  VisitFloatType(a.mask.dtype(), [&]<class T>() {
    const Shape shape = a.mask.shape();
    const T* dy = a.dy != nullptr ? a.dy->data<T>() : nullptr;
    a.dx->Allocate(DataTypeOf<T>(), shape, ctx.place());
    if (dy == nullptr) {
      ZeroOnDevice(a.dx, "dropout_grad");
      return;
    }
    cuda::MultiplyByMask(dy, a.mask.data<T>(), a.dx->mutable_data<T>(), a.mask.numel(),
                         CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "dropout_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(lookup_table, Cuda, LookupTableCudaKernel);
RILL_REGISTER_KERNEL(lookup_table_grad, Cuda, LookupTableGradCudaKernel);
RILL_REGISTER_KERNEL(dropout, Cuda, DropoutCudaKernel);
RILL_REGISTER_KERNEL(dropout_grad, Cuda, DropoutGradCudaKernel);

}  // namespace rill
