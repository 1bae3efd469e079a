// The Transformer classifier of `rill train --model transformer`
// (models_transformer.cc).
#pragma once

#include "rill/builder.h"

namespace rill::cli {

// Logits [N, 10] of a small pre-norm Transformer encoder over 28x28 images
// [N, 784] read as 28 tokens, one per row (see models.h).
Var TransformerLogits(Builder& b, const Var& image);

}  // namespace rill::cli
