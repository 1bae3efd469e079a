#include "tools/rill/models.h"

#include "rill/error.h"

namespace rill::cli {

Classifier BuildClassifier(Builder& b, const std::string& model) {
  Classifier c;
  c.image = b.Data("image", {-1, 784});
  c.label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var logits;
  if (model == "mlp") {
    Var h1 = b.Fc(c.image, 256, Activation::kRelu);
    Var h2 = b.Fc(h1, 128, Activation::kRelu);
    logits = b.Fc(h2, 10);
  } else if (model == "cnn") {
    Var x = b.Reshape(c.image, {-1, 1, 28, 28});
    Var c1 = b.Pool2d(b.Conv2d(x, 32, 5, 1, 2, Activation::kRelu), 2);
    Var c2 = b.Pool2d(b.Conv2d(c1, 64, 5, 1, 2, Activation::kRelu), 2);
    Var h = b.Fc(c2, 1024, Activation::kRelu);
    logits = b.Fc(h, 10);
  } else if (model == "linreg") {
    logits = b.Fc(c.image, 10);
  } else {
    Fail(ErrorCode::kInvalidArgument, "unknown model \"", model,
         "\" (expected mlp, cnn or linreg)");
  }
  c.loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, c.label));
  c.accuracy = b.Accuracy(b.Softmax(logits), c.label);
  return c;
}

std::unique_ptr<Optimizer> MakeOptimizer(const std::string& name, float lr) {
  if (name == "sgd") return std::make_unique<SGD>(lr);
  if (name == "momentum") return std::make_unique<Momentum>(lr);
  if (name == "adam") return std::make_unique<Adam>(lr);
  Fail(ErrorCode::kInvalidArgument, "unknown optimizer \"", name,
       "\" (expected sgd, momentum or adam)");
}

}  // namespace rill::cli
