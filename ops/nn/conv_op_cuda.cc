// CUDA kernels of conv2d and conv2d_grad: the CPU kernels' checks made on the
// host (conv_pool_geometry.h's CheckConvKernel, which they share), outputs
// allocated on the op's device, work launched on the stream the executor is
// launching on (CudaStream::Current()); device code and cuBLAS calls in conv_cuda.cu.
//
// The column matrices (and Filter@GRAD's per-image terms) live in a scratch
// buffer on the device: one per thread and device, grown when a run needs
// more and otherwise kept, as the CPU kernel's thread_local column buffer
// is. A scratch tensor freed at the end of each call would be a block freed
// on the host while this op's kernels are still queued: either another
// stream could be handed it and write into it under them, or the allocator
// must wait for the device before handing it out again, every step. So the
// scratch is not freed while in use: each use ends by recording an event on
// its stream, the next use's stream waits for that event (a use on another
// stream stays ordered after it), and a buffer is replaced only after its
// last use's event has completed.
#include <climits>
#include <map>

#include "ops/nn/conv_cuda.h"
#include "ops/nn/conv_pool_geometry.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// The GEMMs' sizes and batch counts are ints in cuBLAS.
void CheckCublasSizes(const ConvGeometry& s, int64_t chunk, const char* op) {
  const int64_t sizes[] = {s.out_channels / s.groups, s.col_rows(), s.col_cols(), s.groups, chunk};
  for (int64_t v : sizes) {
    RILL_CHECK(v <= INT_MAX, kInvalidArgument, op, ": Input and Filter give a GEMM dimension of ",
               v, ", more than cuBLAS takes (", INT_MAX, ")");
  }
}

// A thread's scratch on one device (see the top of the file).
class ScratchSlot {
 public:
  ScratchSlot() = default;
  ScratchSlot(const ScratchSlot&) = delete;
  ScratchSlot& operator=(const ScratchSlot&) = delete;
  ~ScratchSlot() {
    if (last_use_ == nullptr) return;
    cudaEventSynchronize(last_use_);  // errors ignored: the thread is ending
    cudaEventDestroy(last_use_);
    // buffer_ is freed after this
  }

  // At least `bytes` on `place`; work launched on `stream` after this runs
  // after every earlier use's work.
  void* Acquire(const Place& place, size_t bytes, cudaStream_t stream) {
    if (last_use_ == nullptr) {
      CheckCuda(cudaEventCreateWithFlags(&last_use_, cudaEventDisableTiming),
                "conv2d scratch: cudaEventCreate");
    } else {
      CheckCuda(cudaStreamWaitEvent(stream, last_use_, 0), "conv2d scratch: cudaStreamWaitEvent");
    }
    if (buffer_.bytes() < bytes) {
      CheckCuda(cudaEventSynchronize(last_use_), "conv2d scratch: cudaEventSynchronize");
      buffer_ = Tensor();  // back to the allocator first: it may hand the block out again
      const auto words = static_cast<int64_t>((bytes + sizeof(double) - 1) / sizeof(double));
      buffer_ = Tensor(DataType::kFloat64, {words}, place);
    }
    return buffer_.raw_data();
  }

  // Marks the end of the use whose work was launched on `stream`. Called
  // from a destructor: an error here (a broken context) is left to the
  // stream's next call to report.
  void Release(cudaStream_t stream) noexcept { cudaEventRecord(last_use_, stream); }

 private:
  Tensor buffer_;
  cudaEvent_t last_use_ = nullptr;
};

// The calling thread's scratch on `device`.
ScratchSlot& ThreadScratch(int device) {
  thread_local std::map<int, ScratchSlot> slots;
  return slots[device];
}

// One kernel's use of its thread's scratch, `elements` of T on the op's
// device (none: no scratch, null); ends (the event recorded) however the
// kernel leaves.
template <class T>
class ScratchUse {
 public:
  ScratchUse(const Place& place, int64_t elements, cudaStream_t stream) : stream_(stream) {
    if (elements == 0) return;
    ScratchSlot& slot = ThreadScratch(place.device);
    data_ = static_cast<T*>(slot.Acquire(place, static_cast<size_t>(elements) * sizeof(T), stream));
    slot_ = &slot;
  }
  ~ScratchUse() {
    if (slot_ != nullptr) slot_->Release(stream_);
  }
  ScratchUse(const ScratchUse&) = delete;
  ScratchUse& operator=(const ScratchUse&) = delete;
  T* get() const { return data_; }

 private:
  cudaStream_t stream_;
  ScratchSlot* slot_ = nullptr;
  T* data_ = nullptr;
};

void Conv2dCudaKernel(KernelContext& ctx) {
  const ConvRun run = CheckConvKernel(ctx, false);
  const ConvGeometry& s = run.geo;
  Tensor* output = ctx.Output("Output");
  VisitFloatType(run.input->dtype(), [&]<class T>() {
    const T* x = run.input->data<T>();
    const T* w = run.filter->data<T>();
    const int64_t chunk = cuda::ConvChunkImages(s, sizeof(T), false);
    CheckCublasSizes(s, chunk, "conv2d");
    output->Allocate(DataTypeOf<T>(), ConvOutputShape(s), ctx.place());
    const cudaStream_t stream = CudaStream::Current();
    ScratchUse<T> scratch(ctx.place(), cuda::ConvScratchElements(s, chunk, false), stream);
    cuda::Conv2d(x, w, output->mutable_data<T>(), s, scratch.get(), chunk, stream);
  });
  CheckCuda(cudaGetLastError(), "conv2d: kernel launch");
}

void Conv2dGradCudaKernel(KernelContext& ctx) {
  const ConvRun run = CheckConvKernel(ctx, true);
  const ConvGeometry& s = run.geo;
  Tensor* dinput = ctx.HasOutput("Input@GRAD") ? ctx.Output("Input@GRAD") : nullptr;
  Tensor* dfilter = ctx.HasOutput("Filter@GRAD") ? ctx.Output("Filter@GRAD") : nullptr;
  VisitFloatType(run.input->dtype(), [&]<class T>() {
    const T* x = run.input->data<T>();
    const T* w = run.filter->data<T>();
    const T* dy = run.dout ? run.dout->data<T>() : nullptr;
    const Shape input_shape = run.input->shape();
    const Shape filter_shape = run.filter->shape();
    const bool filter_grad = dfilter != nullptr;
    const int64_t chunk = cuda::ConvChunkImages(s, sizeof(T), filter_grad);
    CheckCublasSizes(s, chunk, "conv2d_grad");
    T* dx = nullptr;
    T* dw = nullptr;
    if (dinput) {
      dinput->Allocate(DataTypeOf<T>(), input_shape, ctx.place());
      dx = dinput->mutable_data<T>();
    }
    if (dfilter) {
      dfilter->Allocate(DataTypeOf<T>(), filter_shape, ctx.place());
      dw = dfilter->mutable_data<T>();
    }
    const cudaStream_t stream = CudaStream::Current();
    const bool computes = dy != nullptr && s.batch > 0 && (dx != nullptr || dw != nullptr);
    ScratchUse<T> scratch(ctx.place(),
                          computes ? cuda::ConvScratchElements(s, chunk, filter_grad) : 0, stream);
    cuda::Conv2dGrad(x, w, dy, dx, dw, s, scratch.get(), chunk, stream);
  });
  CheckCuda(cudaGetLastError(), "conv2d_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(conv2d, Cuda, Conv2dCudaKernel);
RILL_REGISTER_KERNEL(conv2d_grad, Cuda, Conv2dGradCudaKernel);

}  // namespace rill
