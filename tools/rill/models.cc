#include "tools/rill/models.h"

#include "rill/error.h"
#include "rill/op_desc.h"
#include "tools/rill/models_transformer.h"

namespace rill::cli {
namespace {

// A 3x3 convolution (no bias: batch_norm has one) and batch_norm, then `act`.
Var ConvBn(Builder& b, const Var& x, int filters, int stride, Activation act) {
  return b.BatchNorm(b.Conv2d(x, filters, 3, stride, 1, Activation::kNone, 1, /*bias=*/false), act);
}

// relu(x + bn(conv(relu(bn(conv(x)))))): a basic residual block with an
// identity shortcut, keeping x's channels and size.
Var ResidualBlock(Builder& b, const Var& x) {
  const int channels = static_cast<int>(x.shape[1]);
  Var h = ConvBn(b, x, channels, 1, Activation::kRelu);
  h = ConvBn(b, h, channels, 1, Activation::kNone);
  return b.Relu(b.Add(h, x));
}

// The mean of each channel over its plane: [N, C, H, W] -> [N, C, 1, 1].
Var GlobalAveragePool(Builder& b, const Var& x) {
  return b.AppendOp("pool2d", {{"X", {x}}}, {{"Out", 1}}, [](proto::OpDesc* op) {
    SetAttr(op, "pooling_type", "avg");
    SetAttr(op, "global_pooling", true);
    SetAttr(op, "ksize", std::vector<int64_t>{1, 1});  // required; global pooling ignores it
  })[0];
}

// 28x28 -> conv-bn-relu 32 -> 2x2 max pool (14x14) -> residual block ->
// conv-bn-relu 64 stride 2 (7x7) -> two residual blocks -> global average
// pool -> fc 10.
Var ResNet(Builder& b, const Var& image) {
  Var x = b.Reshape(image, {-1, 1, 28, 28});
  x = b.Pool2d(ConvBn(b, x, 32, 1, Activation::kRelu), 2);
  x = ResidualBlock(b, x);
  x = ConvBn(b, x, 64, 2, Activation::kRelu);
  x = ResidualBlock(b, ResidualBlock(b, x));
  return b.Fc(GlobalAveragePool(b, x), 10);
}

}  // namespace

Classifier BuildClassifier(Builder& b, const std::string& model, RnnForm rnn) {
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
  } else if (model == "resnet") {
    logits = ResNet(b, c.image);
  } else if (model == "transformer") {
    logits = TransformerLogits(b, c.image);
  } else if (model == "lstm" || model == "gru") {
    logits = RecurrentLogits(b, c.image, model, rnn);
  } else if (model == "linreg") {
    logits = b.Fc(c.image, 10);
  } else {
    Fail(ErrorCode::kInvalidArgument, "unknown model \"", model,
         "\" (expected mlp, cnn, resnet, transformer, lstm, gru or linreg)");
  }
  c.loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, c.label));
  c.accuracy = b.Accuracy(b.Softmax(logits), c.label);
  return c;
}

std::unique_ptr<Optimizer> MakeOptimizer(const std::string& name, float lr) {
  if (name == "sgd") return std::make_unique<SGD>(lr);
  if (name == "momentum") return std::make_unique<Momentum>(lr);
  if (name == "adam") return std::make_unique<Adam>(lr);
  if (name == "adamw") return std::make_unique<AdamW>(lr);
  Fail(ErrorCode::kInvalidArgument, "unknown optimizer \"", name,
       "\" (expected sgd, momentum, adam or adamw)");
}

}  // namespace rill::cli
