// CUDA kernels of conv2d and conv2d_grad: the CPU kernels' checks made on the
// host (conv2d_op.cc's, message for message), outputs allocated on the op's
// device, work launched on the stream the executor is launching on
// (CudaStream::Current()); device code and cuBLAS calls in conv_cuda.cu.
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
#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <vector>

#include "ops/nn/conv_cuda.h"
#include "ops/nn/im2col.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

struct ConvParams {
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
  int64_t groups;
};

// As conv2d_op.cc's ReadConvParams.
ConvParams ReadConvParams(const KernelContext& ctx) {
  auto pair = [&](const char* name, int64_t min) {
    auto v = ctx.Attr<std::vector<int64_t>>(name);
    RILL_CHECK(v.size() == 2 && v[0] >= min && v[1] >= min, kInvalidArgument, "conv2d: attribute ",
               name, " must be 2 values (height, width) >= ", min, ", is ", ShapeToString(v));
    return v;
  };
  const auto strides = pair("strides", 1);
  const auto paddings = pair("paddings", 0);
  const auto dilations = pair("dilations", 1);
  const int64_t groups = ctx.Attr<int64_t>("groups");
  RILL_CHECK(groups >= 1, kInvalidArgument, "conv2d: attribute groups must be at least 1, is ",
             groups);
  return {strides[0], strides[1], paddings[0], paddings[1], dilations[0], dilations[1], groups};
}

// As conv2d_op.cc's ConvOutputShape (run-time shapes: every dim known).
Shape ConvOutputShape(const Shape& input, const Shape& filter, const ConvParams& p) {
  RILL_CHECK(input.size() == 4, kInvalidArgument, "conv2d: Input must be [N, C, H, W], is ",
             ShapeToString(input));
  RILL_CHECK(filter.size() == 4 &&
                 std::all_of(filter.begin(), filter.end(), [](int64_t d) { return d >= 1; }),
             kInvalidArgument,
             "conv2d: Filter must be [M, C / groups, kh, kw] with known dims, is ",
             ShapeToString(filter));
  RILL_CHECK(filter[0] % p.groups == 0, kInvalidArgument, "conv2d: Filter ", ShapeToString(filter),
             " has ", filter[0], " output channels, which groups = ", p.groups, " does not divide");
  RILL_CHECK(input[1] < 0 || input[1] == filter[1] * p.groups, kInvalidArgument, "conv2d: Input ",
             ShapeToString(input), " has ", input[1], " channels but Filter ",
             ShapeToString(filter), " with groups = ", p.groups, " expects ", filter[1] * p.groups);
  const int64_t pads[2] = {p.pad_h, p.pad_w};
  const int64_t strides[2] = {p.stride_h, p.stride_w};
  const int64_t dilations[2] = {p.dilation_h, p.dilation_w};
  Shape out{input[0], filter[0], -1, -1};
  for (int k = 0; k < 2; ++k) {
    const int64_t in = input[2 + k];
    const int64_t extent = dilations[k] * (filter[2 + k] - 1) + 1;
    RILL_CHECK(in < 0 || in + 2 * pads[k] >= extent, kInvalidArgument, "conv2d: Filter ",
               ShapeToString(filter), " (dilations [", p.dilation_h, ", ", p.dilation_w,
               "]) is larger than Input ", ShapeToString(input), " padded by [", p.pad_h, ", ",
               p.pad_w, "]");
    out[2 + k] = WindowOutputSize(in, filter[2 + k], pads[k], strides[k], dilations[k]);
  }
  return out;
}

cuda::ConvShape MakeConvShape(const Shape& input, const Shape& filter, const Shape& out,
                              const ConvParams& p) {
  cuda::ConvShape s;
  s.batch = input[0];
  s.channels = input[1];
  s.height = input[2];
  s.width = input[3];
  s.out_channels = filter[0];
  s.out_h = out[2];
  s.out_w = out[3];
  s.kernel_h = filter[2];
  s.kernel_w = filter[3];
  s.stride_h = p.stride_h;
  s.stride_w = p.stride_w;
  s.pad_h = p.pad_h;
  s.pad_w = p.pad_w;
  s.dilation_h = p.dilation_h;
  s.dilation_w = p.dilation_w;
  s.groups = p.groups;
  return s;
}

// The GEMMs' sizes and batch counts are ints in cuBLAS.
void CheckCublasSizes(const cuda::ConvShape& s, int64_t chunk, const char* op) {
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
  const Tensor& input = ctx.Input("Input");
  const Tensor& filter = ctx.Input("Filter");
  const ConvParams p = ReadConvParams(ctx);
  const Shape out_shape = ConvOutputShape(input.shape(), filter.shape(), p);
  RILL_CHECK(filter.dtype() == input.dtype(), kInvalidArgument, "conv2d: Filter is ",
             DataTypeName(filter.dtype()), " but Input is ", DataTypeName(input.dtype()));
  const cuda::ConvShape s = MakeConvShape(input.shape(), filter.shape(), out_shape, p);
  Tensor* output = ctx.Output("Output");
  VisitFloatType(input.dtype(), [&]<class T>() {
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    const int64_t chunk = cuda::ConvChunkImages(s, sizeof(T), false);
    CheckCublasSizes(s, chunk, "conv2d");
    output->Allocate(DataTypeOf<T>(), out_shape, ctx.place());
    const cudaStream_t stream = CudaStream::Current();
    ScratchUse<T> scratch(ctx.place(), cuda::ConvScratchElements(s, chunk, false), stream);
    cuda::Conv2d(x, w, output->mutable_data<T>(), s, scratch.get(), chunk, stream);
  });
  CheckCuda(cudaGetLastError(), "conv2d: kernel launch");
}

void Conv2dGradCudaKernel(KernelContext& ctx) {
  const Tensor& input = ctx.Input("Input");
  const Tensor& filter = ctx.Input("Filter");
  // A missing output gradient is zero.
  const Tensor* dout = ctx.HasInput("Output@GRAD") ? &ctx.Input("Output@GRAD") : nullptr;
  const ConvParams p = ReadConvParams(ctx);
  const Shape out_shape = ConvOutputShape(input.shape(), filter.shape(), p);
  RILL_CHECK(filter.dtype() == input.dtype(), kInvalidArgument, "conv2d_grad: Filter is ",
             DataTypeName(filter.dtype()), " but Input is ", DataTypeName(input.dtype()));
  RILL_CHECK(dout == nullptr || dout->shape() == out_shape, kInvalidArgument,
             "conv2d_grad: Output@GRAD is ", ShapeToString(dout ? dout->shape() : Shape{}),
             " but the output is ", ShapeToString(out_shape));
  const cuda::ConvShape s = MakeConvShape(input.shape(), filter.shape(), out_shape, p);
  Tensor* dinput = ctx.HasOutput("Input@GRAD") ? ctx.Output("Input@GRAD") : nullptr;
  Tensor* dfilter = ctx.HasOutput("Filter@GRAD") ? ctx.Output("Filter@GRAD") : nullptr;
  VisitFloatType(input.dtype(), [&]<class T>() {
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    const T* dy = dout ? dout->data<T>() : nullptr;
    const Shape input_shape = input.shape();
    const Shape filter_shape = filter.shape();
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
