// The models `rill train` and the benchmarks build: Fashion-MNIST classifiers
// over 28x28 grey images with 10 classes.
#pragma once

#include <memory>
#include <string>

#include "rill/builder.h"
#include "rill/optimizer.h"

namespace rill::cli {

struct Classifier {
  Var image;     // float32 [-1, 784]
  Var label;     // int64 [-1, 1]
  Var loss;      // float32 [1], mean softmax cross-entropy
  Var accuracy;  // float32 [1]
};

// "mlp": 784-256-128-10 with ReLU. "cnn": two 5x5 conv + ReLU + 2x2 max-pool
// layers (32 and 64 channels), fc 1024 + ReLU, fc 10. "resnet": a small
// residual network: 3x3 conv-bn-relu (32 channels) and 2x2 max-pool, a
// residual block (two conv-bn, identity shortcut), a stride-2 conv-bn-relu to
// 64 channels, two more residual blocks, global average pooling, fc 10.
// "transformer": the rows as 28 tokens, fc 64 plus a learned position
// embedding, two pre-norm encoder layers (4 heads, GELU FFN 128), layer norm,
// the mean over tokens, fc 10 (models_transformer.h). "lstm" and "gru": the
// image read as 28 steps of 28 pixels (rows) by a recurrent layer of 128
// units, its last hidden state through fc 10, the layer built as `rnn` says
// (Builder::Lstm: one fused op, unrolled cells, or cells in a While loop,
// which then writes no sequence output). "linreg": one linear layer 784-10
// (multinomial logistic regression). Throws kInvalidArgument for another name.
Classifier BuildClassifier(Builder& builder, const std::string& model,
                           RnnForm rnn = RnnForm::kFused);

// The logits [N, 10] of "lstm" or "gru" (models_rnn.cc) from images [N, 784];
// throws kInvalidArgument for another model.
Var RecurrentLogits(Builder& builder, const Var& image, const std::string& model, RnnForm rnn);

// "sgd", "momentum", "adam" or "adamw" (weight decay 0.01, PyTorch's default)
// at learning rate `lr`; throws kInvalidArgument for another name.
std::unique_ptr<Optimizer> MakeOptimizer(const std::string& name, float lr);

}  // namespace rill::cli
