#include "rill/optimizer.h"

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

void Optimizer::AppendL2(Builder& builder, const std::vector<ParamGrad>& pairs) {
  for (const auto& pair : pairs) {
    Var decay = builder.Scale(builder.Lookup(pair.param), l2_);
    Var grad = builder.Lookup(pair.grad);
    builder.AppendOpTo("sum", {{"X", {grad, decay}}}, {{"Out", {grad}}});
  }
}

void Optimizer::AppendClip(Builder& builder, const std::vector<ParamGrad>& pairs) {
  std::vector<Var> squares;
  for (const auto& pair : pairs) {
    squares.push_back(
        builder.AppendOp("squared_l2_norm", {{"X", {builder.Lookup(pair.grad)}}}, {{"Out", 1}})[0]);
  }
  Var total = squares.size() == 1 ? squares[0] : builder.Sum(squares);
  Var norm = builder.AppendOp("sqrt", {{"X", {total}}}, {{"Out", 1}})[0];
  Var clip = builder.Constant({1}, clip_norm_);
  Var denominator =
      builder.AppendOp("elementwise_max", {{"X", {norm}}, {"Y", {clip}}}, {{"Out", 1}})[0];
  Var factor = builder.Div(clip, denominator);
  for (const auto& pair : pairs) {
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
  Var m1 = builder.Persistable(param.name + ".moment1", param.shape, 0, param.dtype);
  Var m2 = builder.Persistable(param.name + ".moment2", param.shape, 0, param.dtype);
  Var b1 = builder.Persistable(param.name + ".beta1_pow", {1}, beta1_, param.dtype);
  Var b2 = builder.Persistable(param.name + ".beta2_pow", {1}, beta2_, param.dtype);
  builder.AppendOpTo("adam",
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
                     });
}

}  // namespace rill
