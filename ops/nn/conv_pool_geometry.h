// conv2d's and pool2d's attributes read and checked, their inputs checked
// against them and their geometry and output shapes computed: one copy for
// shape inference, the CPU kernels and the CUDA kernels' host glue, so all of
// them accept the same inputs and fail with the same messages.
#pragma once

#include "ops/nn/window2d.h"
#include "rill/shape.h"

namespace rill {

class KernelContext;
class ShapeContext;
class Tensor;

// conv2d's attributes. Read (and checked) from either context: validation
// checks them too, but shape inference also runs from the builder, before
// validation.
struct ConvParams {
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
  int64_t groups;
};
ConvParams ReadConvParams(const ShapeContext& ctx);
ConvParams ReadConvParams(const KernelContext& ctx);

// Checks Input and Filter against each other and the attributes and returns
// the run's geometry. Input dims of -1 (known at shape inference only) pass
// unchecked and leave -1 in the geometry.
ConvGeometry MakeConvGeometry(const Shape& input, const Shape& filter, const ConvParams& p);
// Output's shape: [batch, out_channels, out_h, out_w].
Shape ConvOutputShape(const ConvGeometry& g);

// What a conv2d (grad false) or conv2d_grad kernel runs on, checked as the
// CPU and CUDA kernels alike check it: the attributes, Input against Filter,
// their dtypes and, for the gradient, Output@GRAD's shape when it is bound.
struct ConvRun {
  const Tensor* input = nullptr;
  const Tensor* filter = nullptr;
  const Tensor* dout = nullptr;  // Output@GRAD; null: not bound (zero), or conv2d
  ConvGeometry geo;
};
ConvRun CheckConvKernel(const KernelContext& ctx, bool grad);

// pool2d's attributes (read and checked as conv2d's are).
struct PoolParams {
  bool is_max = true;
  bool global = false;
  bool exclusive = true;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
};
PoolParams ReadPoolParams(const ShapeContext& ctx);
PoolParams ReadPoolParams(const KernelContext& ctx);

// Checks X against the attributes and returns the window sweep over it.
// With global_pooling the window is the whole (possibly unknown) plane.
PoolGeometry MakePoolGeometry(const Shape& x, const PoolParams& p);
// Out's shape: [batch, channels, out_h, out_w].
Shape PoolOutputShape(const PoolGeometry& g);

// What a pool2d (grad false) or pool2d_grad kernel runs on, checked: the
// attributes, X and, for the gradient, Out@GRAD's shape when it is bound.
struct PoolRun {
  const Tensor* x = nullptr;
  const Tensor* dout = nullptr;  // Out@GRAD; null: not bound (zero), or pool2d
  PoolGeometry geo;
};
PoolRun CheckPoolKernel(const KernelContext& ctx, bool grad);

}  // namespace rill
