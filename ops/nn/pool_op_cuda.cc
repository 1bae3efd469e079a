// CUDA kernels of pool2d and pool2d_grad: the CPU kernels' checks made on the
// host (pool2d_op.cc's, message for message), outputs allocated on the op's
// device, work launched on the stream the executor is launching on
// (CudaStream::Current()); device code in pool_cuda.cu.
#include <string>
#include <vector>

#include "ops/nn/im2col.h"
#include "ops/nn/pool_cuda.h"
#include "runtime/device/cuda_stream.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

struct PoolParams {
  bool is_max = true;
  bool global = false;
  bool exclusive = true;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
};

// As pool2d_op.cc's ReadPoolParams.
PoolParams ReadPoolParams(const KernelContext& ctx) {
  auto pair = [&](const char* name, int64_t min) {
    auto v = ctx.Attr<std::vector<int64_t>>(name);
    RILL_CHECK(v.size() == 2 && v[0] >= min && v[1] >= min, kInvalidArgument, "pool2d: attribute ",
               name, " must be 2 values (height, width) >= ", min, ", is ", ShapeToString(v));
    return v;
  };
  const std::string type = ctx.Attr<std::string>("pooling_type");
  RILL_CHECK(type == "max" || type == "avg", kInvalidArgument,
             "pool2d: pooling_type must be \"max\" or \"avg\", is \"", type, "\"");
  PoolParams p;
  p.is_max = type == "max";
  p.global = ctx.Attr<bool>("global_pooling");
  p.exclusive = ctx.Attr<bool>("exclusive");
  const auto ksize = pair("ksize", 1);
  const auto strides = pair("strides", 1);
  const auto paddings = pair("paddings", 0);
  p.kernel_h = ksize[0];
  p.kernel_w = ksize[1];
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  p.pad_h = paddings[0];
  p.pad_w = paddings[1];
  return p;
}

// As pool2d_op.cc's PoolOutputShape.
Shape PoolOutputShape(const Shape& x, const PoolParams& p) {
  RILL_CHECK(x.size() == 4, kInvalidArgument, "pool2d: X must be [N, C, H, W], is ",
             ShapeToString(x));
  RILL_CHECK(x[2] != 0 && x[3] != 0, kInvalidArgument, "pool2d: X ", ShapeToString(x),
             " has an empty plane");
  if (p.global) return {x[0], x[1], 1, 1};
  RILL_CHECK(p.pad_h < p.kernel_h && p.pad_w < p.kernel_w, kInvalidArgument, "pool2d: paddings [",
             p.pad_h, ", ", p.pad_w, "] must be smaller than ksize [", p.kernel_h, ", ", p.kernel_w,
             "]");
  const int64_t kernel[2] = {p.kernel_h, p.kernel_w};
  const int64_t pads[2] = {p.pad_h, p.pad_w};
  const int64_t strides[2] = {p.stride_h, p.stride_w};
  Shape out{x[0], x[1], -1, -1};
  for (int k = 0; k < 2; ++k) {
    const int64_t in = x[2 + k];
    RILL_CHECK(in < 0 || in + 2 * pads[k] >= kernel[k], kInvalidArgument, "pool2d: ksize [",
               p.kernel_h, ", ", p.kernel_w, "] is larger than X ", ShapeToString(x),
               " padded by [", p.pad_h, ", ", p.pad_w, "]");
    out[2 + k] = WindowOutputSize(in, kernel[k], pads[k], strides[k]);
  }
  return out;
}

// As pool2d_op.cc's MakeGeometry.
cuda::PoolShape MakePoolShape(const Shape& x, const Shape& out, const PoolParams& p) {
  cuda::PoolShape s;
  s.planes = x[0] * x[1];
  s.height = x[2];
  s.width = x[3];
  s.out_h = out[2];
  s.out_w = out[3];
  if (p.global) {
    s.kernel_h = x[2];
    s.kernel_w = x[3];
    s.stride_h = s.stride_w = 1;
    s.pad_h = s.pad_w = 0;
  } else {
    s.kernel_h = p.kernel_h;
    s.kernel_w = p.kernel_w;
    s.stride_h = p.stride_h;
    s.stride_w = p.stride_w;
    s.pad_h = p.pad_h;
    s.pad_w = p.pad_w;
  }
  s.is_max = p.is_max;
  s.exclusive = p.exclusive;
  return s;
}

void Pool2dCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const PoolParams p = ReadPoolParams(ctx);
  const Shape out_shape = PoolOutputShape(x.shape(), p);
  const cuda::PoolShape s = MakePoolShape(x.shape(), out_shape, p);
  Tensor* out = ctx.Output("Out");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    out->Allocate(DataTypeOf<T>(), out_shape, ctx.place());
    cuda::Pool2d(in, out->mutable_data<T>(), s, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "pool2d: kernel launch");
}

void Pool2dGradCudaKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  // A missing output gradient is zero.
  const Tensor* dout = ctx.HasInput("Out@GRAD") ? &ctx.Input("Out@GRAD") : nullptr;
  const PoolParams p = ReadPoolParams(ctx);
  const Shape out_shape = PoolOutputShape(x.shape(), p);
  RILL_CHECK(dout == nullptr || dout->shape() == out_shape, kInvalidArgument,
             "pool2d_grad: Out@GRAD is ", ShapeToString(dout ? dout->shape() : Shape{}),
             " but the output is ", ShapeToString(out_shape));
  if (!ctx.HasOutput("X@GRAD")) return;
  const cuda::PoolShape s = MakePoolShape(x.shape(), out_shape, p);
  Tensor* dx = ctx.Output("X@GRAD");
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    const T* dy = dout ? dout->data<T>() : nullptr;
    const Shape x_shape = x.shape();
    dx->Allocate(DataTypeOf<T>(), x_shape, ctx.place());
    cuda::Pool2dGrad(in, dy, dx->mutable_data<T>(), s, CudaStream::Current());
  });
  CheckCuda(cudaGetLastError(), "pool2d_grad: kernel launch");
}

}  // namespace

RILL_REGISTER_KERNEL(pool2d, Cuda, Pool2dCudaKernel);
RILL_REGISTER_KERNEL(pool2d_grad, Cuda, Pool2dGradCudaKernel);

}  // namespace rill
