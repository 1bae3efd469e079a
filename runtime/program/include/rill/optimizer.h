// Optimizers: each appends append_backward's gradient ops, optional L2
// regularisation and global-norm clipping, then one update op per parameter.
//
//   Adam adam(1e-3);
//   adam.set_l2(1e-4).set_clip_global_norm(5.0);
//   auto params = adam.Minimize(builder, loss);
//
// The learning rate is a persistable [1] float32 variable ("learning_rate_N"),
// whatever the parameters' type (the update ops read a float32 or float64
// rate), that a trainer may overwrite between steps to decay it, or that a
// schedule turns into the step's rate with ops of the program. L2 and
// clipping compute in the gradients' type.
//
// With set_placeable(true) the update ops (and the schedule's) go into a
// placeable block, which the distribute transpiler moves to parameter servers
// (runtime/transpile/include/rill/transpiler.h); in one process the numbers are the same. L2 and
// clipping stay outside it: they combine gradients on the trainer.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rill/backward.h"
#include "rill/builder.h"

namespace rill {

class Optimizer {
 public:
  explicit Optimizer(float learning_rate) : learning_rate_(learning_rate) {}
  virtual ~Optimizer() = default;

  // Adds coeff * param to each gradient (weight decay). A sparse gradient
  // (selected rows, from Embedding with is_sparse) decays only the rows it
  // holds, once per row: a row the step did not look up does not decay, as in
  // Fluid, where the dense gradient would decay every row.
  Optimizer& set_l2(float coeff) {
    l2_ = coeff;
    return *this;
  }
  // Scales all gradients by clip / max(clip, global L2 norm of all gradients).
  // A sparse gradient counts as the dense tensor it stands for (its rows'
  // values, repeated rows summed first). The gradients must share one type.
  Optimizer& set_clip_global_norm(float clip) {
    clip_norm_ = clip;
    return *this;
  }

  // Wraps the update ops in a placeable block (Builder::PlaceableBlock).
  Optimizer& set_placeable(bool placeable) {
    placeable_ = placeable;
    return *this;
  }
  // Ops computing each step's learning rate from the base rate variable (a
  // decay), appended before the updates — inside the placeable block when
  // there is one. Returns the variable the updates read.
  using LearningRateSchedule = std::function<Var(Builder& builder, const Var& base_rate)>;
  Optimizer& set_learning_rate_schedule(LearningRateSchedule schedule) {
    schedule_ = std::move(schedule);
    return *this;
  }

  // Appends backward, regularisation, clipping and updates; returns the parameters updated.
  std::vector<ParamGrad> Minimize(Builder& builder, const Var& loss);
  // The learning-rate variable (valid after Minimize).
  const std::string& learning_rate_var() const { return learning_rate_var_; }

 protected:
  // Appends the update ops of one parameter.
  virtual void AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) = 0;

 private:
  void AppendL2(Builder& builder, const std::vector<ParamGrad>& pairs);
  void AppendClip(Builder& builder, const std::vector<ParamGrad>& pairs);

  float learning_rate_;
  float l2_ = 0;
  float clip_norm_ = 0;
  bool placeable_ = false;
  LearningRateSchedule schedule_;
  std::string learning_rate_var_;
};

// A schedule (Optimizer::set_learning_rate_schedule): linear warm-up from 0
// to the base rate over `warmup_steps`, then half a cosine down to min_ratio
// times the base rate over `decay_steps`, flat after that. It counts the steps
// in a persistable float32 variable "lr_step_N" (exact to 2^24 steps, saved
// with the parameters, so a resumed job goes on where it was), incremented
// by each step before its rate is computed (op warmup_cosine_decay).
//
//   Adam adam(1e-3);
//   adam.set_learning_rate_schedule(WarmupCosineDecay(500, steps - 500));
Optimizer::LearningRateSchedule WarmupCosineDecay(int warmup_steps, int decay_steps,
                                                  float min_ratio = 0);

// param -= lr * grad
class SGD : public Optimizer {
 public:
  using Optimizer::Optimizer;

 protected:
  void AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) override;
};

// velocity = mu * velocity + grad; param -= lr * velocity (or the Nesterov form).
class Momentum : public Optimizer {
 public:
  Momentum(float learning_rate, float mu = 0.9f, bool nesterov = false)
      : Optimizer(learning_rate), mu_(mu), nesterov_(nesterov) {}

 protected:
  void AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) override;

 private:
  float mu_;
  bool nesterov_;
};

// Adam with bias correction, as PyTorch computes it.
class Adam : public Optimizer {
 public:
  Adam(float learning_rate, float beta1 = 0.9f, float beta2 = 0.999f, float epsilon = 1e-8f)
      : Optimizer(learning_rate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}

 protected:
  void AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) override;

  // Appends op `type` (adam or adamw) on param's moments and beta powers,
  // with Adam's attributes and then `more_attrs`.
  void AppendAdamOp(Builder& builder, const std::string& type, const Var& param, const Var& grad,
                    const Var& lr, const OpAttrs& more_attrs);

 private:
  float beta1_, beta2_, epsilon_;
};

// Adam with decoupled weight decay, as torch.optim.AdamW (op adamw): each
// step scales the parameter by 1 - lr * weight_decay, then takes Adam's step
// (the decay does not enter the moments, unlike set_l2). Dense gradients only.
//
//   AdamW adamw(1e-3, /*weight_decay=*/0.01f);
//   adamw.Minimize(builder, loss);
class AdamW : public Adam {
 public:
  AdamW(float learning_rate, float weight_decay = 0.01f, float beta1 = 0.9f, float beta2 = 0.999f,
        float epsilon = 1e-8f)
      : Adam(learning_rate, beta1, beta2, epsilon), weight_decay_(weight_decay) {}

 protected:
  void AppendUpdate(Builder& builder, const Var& param, const Var& grad, const Var& lr) override;

 private:
  float weight_decay_;
};

}  // namespace rill
