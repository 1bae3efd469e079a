#include "rill/optimizer.h"

#include <map>

#include "rill/error.h"
#include "rill/op_desc.h"

namespace rill {

std::vector<ParamGrad> Optimizer::Minimize(Builder& builder, const Var& loss) {
  std::vector<ParamGrad> pairs = AppendBackward(&builder.main(), loss.name);
  RILL_CHECK(!pairs.empty(), kInvalidArgument, "loss \"", loss.name,
             "\" depends on no trainable parameter");
  // Everything appended from here updates parameters.
  const proto::OpRole previous = builder.role();
  builder.set_role(proto::ROLE_OPTIMIZE);
  learning_rate_var_ = builder.main().UniqueName("learning_rate");
  Var lr = builder.Persistable(learning_rate_var_, {1}, learning_rate_);
  if (l2_ > 0) AppendL2(builder, pairs);
  if (clip_norm_ > 0) AppendClip(builder, pairs);
  auto updates = [&](Builder& b) {
    const Var rate = schedule_ ? schedule_(b, lr) : lr;
    for (const auto& pair : pairs) AppendUpdate(b, b.Lookup(pair.param), b.Lookup(pair.grad), rate);
  };
  if (placeable_) {
    std::vector<Var> inputs, outputs;
    for (const auto& pair : pairs) {
      inputs.push_back(builder.Lookup(pair.grad));
      outputs.push_back(builder.Lookup(pair.param));
    }
    inputs.push_back(lr);
    builder.PlaceableBlock(inputs, outputs, updates);
  } else {
    updates(builder);
  }
  builder.set_role(previous);
  return pairs;
}

Optimizer::LearningRateSchedule WarmupCosineDecay(int warmup_steps, int decay_steps,
                                                  float min_ratio) {
  RILL_CHECK(warmup_steps >= 0 && decay_steps >= 1 && min_ratio >= 0 && min_ratio <= 1,
             kInvalidArgument, "WarmupCosineDecay(", warmup_steps, ", ", decay_steps, ", ",
             min_ratio,
             "): the warm-up takes 0 or more steps, the decay 1 or more, and the "
             "final ratio is in [0, 1]");
  return [=](Builder& b, const Var& base_rate) {
    const Var step = b.Persistable(b.main().UniqueName("lr_step"), {1}, 0);
    b.AppendOpTo("scale", {{"X", {step}}}, {{"Out", {step}}},
                 [](proto::OpDesc* op) { SetAttr(op, "bias", 1.0f); });
    return b
        .AppendOp("warmup_cosine_decay", {{"Step", {step}}, {"BaseRate", {base_rate}}},
                  {{"Out", 1}},
                  [=](proto::OpDesc* op) {
                    SetAttr(op, "warmup_steps", warmup_steps);
                    SetAttr(op, "decay_steps", decay_steps);
                    SetAttr(op, "min_ratio", min_ratio);
                  })
        .front();
  };
}

namespace {

// Whether append_backward declared the gradient as selected rows (an
// embedding looked up with is_sparse).
bool IsSparse(Builder& builder, const std::string& grad) {
  const proto::VarDesc* desc = FindVarDesc(builder.main().desc(), 0, grad);
  return desc != nullptr && desc->kind() == proto::SELECTED_ROWS;
}

}  // namespace

void Optimizer::AppendL2(Builder& builder, const std::vector<ParamGrad>& pairs) {
  // The coefficient as a constant of each parameter type (fill_constant
  // widens it through its decimal form, as the sparse op does its attribute).
  std::map<DataType, Var> coeff;
  for (const auto& pair : pairs) {
    const Var param = builder.Lookup(pair.param);
    const Var grad = builder.Lookup(pair.grad);
    if (IsSparse(builder, pair.grad)) {
      // Only the rows the step touched decay (ops/optimizer/sparse_l2_decay_op.cc).
      builder.AppendOpTo("sparse_l2_decay", {{"Param", {param}}, {"Grad", {grad}}},
                         {{"GradOut", {grad}}},
                         [&](proto::OpDesc* op) { SetAttr(op, "coeff", l2_); });
      continue;
    }
    if (!coeff.count(param.dtype)) coeff[param.dtype] = builder.Constant({1}, l2_, param.dtype);
    Var decay = builder.Mul(param, coeff.at(param.dtype));
    builder.AppendOpTo("sum", {{"X", {grad, decay}}}, {{"Out", {grad}}});
  }
}

void Optimizer::AppendClip(Builder& builder, const std::vector<ParamGrad>& pairs) {
  // The norm and the factor are computed in the gradients' type; there is no
  // cast op to bring gradients of two types to one sum.
  const Var first = builder.Lookup(pairs[0].grad);
  std::vector<Var> squares;
  for (const auto& pair : pairs) {
    const Var grad = builder.Lookup(pair.grad);
    RILL_CHECK(grad.dtype == first.dtype, kUnimplemented,
               "set_clip_global_norm: the gradients have different types (", first.name, " is ",
               DataTypeName(first.dtype), ", ", grad.name, " is ", DataTypeName(grad.dtype),
               "); one global norm needs parameters of one type");
    // Selected rows count their rows' values, repeats merged first.
    squares.push_back(builder.AppendOp("squared_l2_norm", {{"X", {grad}}}, {{"Out", 1}})[0]);
  }
  Var total = squares.size() == 1 ? squares[0] : builder.Sum(squares);
  Var norm = builder.AppendOp("sqrt", {{"X", {total}}}, {{"Out", 1}})[0];
  Var clip = builder.Constant({1}, clip_norm_, first.dtype);
  Var denominator =
      builder.AppendOp("elementwise_max", {{"X", {norm}}, {"Y", {clip}}}, {{"Out", 1}})[0];
  Var factor = builder.Div(clip, denominator);
  for (const auto& pair : pairs) {
    // A sparse gradient stays selected rows: elementwise_mul scales its values.
    Var grad = builder.Lookup(pair.grad);
    builder.AppendOpTo("elementwise_mul", {{"X", {grad}}, {"Y", {factor}}}, {{"Out", {grad}}});
  }
}

void SGD::AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) {
  builder.AppendOpTo("sgd", {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr}}},
                     {{"ParamOut", {param}}});
}

void Momentum::AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) {
  Var velocity = builder.Persistable(param.name + ".velocity", param.shape, 0, param.dtype);
  builder.AppendOpTo(
      "momentum",
      {{"Param", {param}}, {"Grad", {grad}}, {"Velocity", {velocity}}, {"LearningRate", {lr}}},
      {{"ParamOut", {param}}, {"VelocityOut", {velocity}}}, [&](proto::OpDesc* op) {
        SetAttr(op, "mu", mu_);
        SetAttr(op, "use_nesterov", nesterov_);
      });
}

void Adam::AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) {
  AppendAdamOp(builder, "adam", param, grad, lr, {});
}

void AdamW::AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) {
  AppendAdamOp(builder, "adamw", param, grad, lr,
               [&](proto::OpDesc* op) { SetAttr(op, "weight_decay", weight_decay_); });
}

void Adam::AppendAdamOp(Builder& builder, const std::string& type, const Var& param,
                        const Var& grad, const Var& lr, const OpAttrs& more_attrs) {
  Var m1 = builder.Persistable(param.name + ".moment1", param.shape, 0, param.dtype);
  Var m2 = builder.Persistable(param.name + ".moment2", param.shape, 0, param.dtype);
  Var b1 = builder.Persistable(param.name + ".beta1_pow", {1}, beta1_, param.dtype);
  Var b2 = builder.Persistable(param.name + ".beta2_pow", {1}, beta2_, param.dtype);
  builder.AppendOpTo(type,
                     {{"Param", {param}},
                      {"Grad", {grad}},
                      {"LearningRate", {lr}},
                      {"Moment1", {m1}},
                      {"Moment2", {m2}},
                      {"Beta1Pow", {b1}},
                      {"Beta2Pow", {b2}}},
                     {{"ParamOut", {param}},
                      {"Moment1Out", {m1}},
                      {"Moment2Out", {m2}},
                      {"Beta1PowOut", {b1}},
                      {"Beta2PowOut", {b2}}},
                     [&](proto::OpDesc* op) {
                       SetAttr(op, "beta1", beta1_);
                       SetAttr(op, "beta2", beta2_);
                       SetAttr(op, "epsilon", epsilon_);
                       if (more_attrs) more_attrs(op);
                     });
}

}  // namespace rill
