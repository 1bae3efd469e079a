// The attributes of scale, read alike by its CPU kernel (scale_op.cc) and its
// CUDA kernel (unary_op_cuda.cc): floats (defaults 1, 0, true in the schema),
// converted to the data's type before use.
#pragma once

#include "rill/kernel_context.h"

namespace rill {

struct ScaleAttrs {
  float scale;
  float bias;
  bool bias_after_scale;
};

// Reads scale, bias and bias_after_scale, in that order.
inline ScaleAttrs ReadScaleAttrs(const KernelContext& ctx) {
  const float scale = ctx.Attr<float>("scale");
  const float bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  return {scale, bias, after};
}

}  // namespace rill
