// Helpers the optimizer ops share: reading their scalar inputs, and their
// gradient, which may be dense or (from an embedding with is_sparse) selected rows.
// The operands of the dense updates are read and checked here once for the CPU
// kernels (sgd_op.cc, momentum_op.cc, adam_op.cc) and their CUDA glue
// (optimizer_op_cuda.cc): same reads, same checks, same order and messages.
#pragma once

#include "ops/decimal_double.h"
#include "ops/optimizer/warmup_cosine.h"
#include "rill/kernel_context.h"
#include "rill/selected_rows.h"
#include "rill/shape_context.h"

namespace rill {

// Shape inference: input `slot` has Param's shape and type.
void CheckLikeParam(ShapeContext& ctx, const std::string& slot);
// Shape inference: input `slot` holds one float32 or float64 element.
void CheckScalarSlot(ShapeContext& ctx, const std::string& slot);

// The value of a one-element float32/float64 tensor (the learning rate, beta^t).
double ReadScalar(const Tensor& t, const char* slot);

// ReadScalar's checks alone: `t` holds one float32 or float64 element (the CUDA
// kernels leave its value on the device).
void CheckScalar(const Tensor& t, const char* slot);

// The value of a tensor CheckScalar accepted, widened as ReadScalar does.
double ScalarValue(const Tensor& t);

// Checks a dense gradient against Param: the same shape and type.
void CheckDenseGrad(const Tensor& grad, const Tensor& param);

// The Grad input as selected rows merged (each row once, repeats summed),
// checked against Param: its height is Param's rows and its rows are Param's
// row shape. Call only when ctx.InputIsSelectedRows("Grad").
SelectedRows SparseGrad(const KernelContext& ctx, const Tensor& param);

// sgd's dense gradient (the Grad input, checked against Param) and its output.
struct SgdDense {
  const Tensor& grad;
  Tensor* param_out;
};
SgdDense ReadSgdDense(KernelContext& ctx, const Tensor& param);

// momentum's operands besides Param and Grad, read and checked (Grad and
// Velocity against Param); LearningRate passed CheckScalar.
struct MomentumArgs {
  const Tensor& velocity;
  const Tensor& learning_rate;
  double mu;  // the attribute, widened by DecimalDouble
  bool nesterov;
  Tensor* param_out;
  Tensor* velocity_out;
};
MomentumArgs ReadMomentumArgs(KernelContext& ctx, const Tensor& param, const Tensor& grad);

// adam's (adamw's) inputs besides Param and Grad and its attributes (widened
// by DecimalDouble); LearningRate, Beta1Pow and Beta2Pow passed CheckScalar.
struct AdamArgs {
  const Tensor& moment1;
  const Tensor& moment2;
  const Tensor& learning_rate;
  const Tensor& beta1_pow;
  const Tensor& beta2_pow;
  double beta1, beta2, epsilon;
  double weight_decay;  // adamw's attribute; 0 for adam
};
// weight_decay is read only when `decoupled_decay` (adamw).
AdamArgs ReadAdamArgs(const KernelContext& ctx, bool decoupled_decay = false);

// adam's outputs that Param's update writes.
struct AdamOutputs {
  Tensor* param_out;
  Tensor* moment1_out;
  Tensor* moment2_out;
};
// Checks `dense_grad` (null for a sparse one, which SparseGrad checked) and the
// moments against Param, then binds the outputs.
AdamOutputs CheckAdamOperands(KernelContext& ctx, const AdamArgs& args, const Tensor& param,
                              const Tensor* dense_grad);

// warmup_cosine_decay's attributes (Step and BaseRate are read by the kernels).
WarmupCosineAttrs ReadWarmupCosineAttrs(const KernelContext& ctx);

}  // namespace rill
