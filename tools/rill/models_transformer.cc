// A small Vision-Transformer-style classifier: 7x7 patches as tokens, a
// linear patch embedding plus a learned position embedding, two pre-norm
// encoder layers (Builder::TransformerEncoderLayer), a final layer norm, the
// mean over tokens and a linear classifier.
#include "tools/rill/models_transformer.h"

namespace rill::cli {
namespace {

constexpr int64_t kPatchHeight = 7;
constexpr int64_t kPatchWidth = 7;
constexpr int64_t kPatchRows = 28 / kPatchHeight;
constexpr int64_t kPatchColumns = 28 / kPatchWidth;
constexpr int64_t kTokens = kPatchRows * kPatchColumns;
constexpr int kWidth = 64;
constexpr int kHeads = 4;
constexpr int kFfnHidden = 128;
constexpr int kLayers = 2;

// [N, 784] -> [N, T, patch height * width]: patches in row-major order, each
// flattened row by row.
Var Patches(Builder& b, const Var& image) {
  Var x = b.Reshape(image, {-1, kPatchRows, kPatchHeight, kPatchColumns, kPatchWidth});
  x = b.Transpose(x, {0, 1, 3, 2, 4});  // [N, patch row, patch column, height, width]
  return b.Reshape(x, {-1, kTokens, kPatchHeight * kPatchWidth});
}

// The mean over tokens, [N, T, E] -> [N, E], as a broadcast matmul with a
// constant [1, T] row of 1/T: there is no reduce-over-an-axis op, and the
// matmul's gradient spreads the output gradient evenly over the tokens.
Var MeanOverTokens(Builder& b, const Var& x) {
  const int64_t tokens = x.shape[1];
  Var row = b.Constant({1, tokens}, 1.0f / static_cast<float>(tokens), x.dtype);
  return b.Reshape(b.MatMul(row, x), {-1, x.shape[2]});
}

}  // namespace

Var TransformerLogits(Builder& b, const Var& image) {
  Var x = b.Fc(Patches(b, image), kWidth, Activation::kNone, /*num_flatten_dims=*/2);
  Var position = b.Parameter(b.main().UniqueName("position_embedding") + ".w", {kTokens, kWidth},
                             Initializer::Normal(0, 0.02f));
  x = b.Add(x, position);  // [N, T, E] + [T, E], broadcast over the batch
  for (int i = 0; i < kLayers; ++i) x = b.TransformerEncoderLayer(x, kHeads, kFfnHidden);
  return b.Fc(MeanOverTokens(b, b.LayerNorm(x, /*begin_norm_axis=*/2)), 10);
}

}  // namespace rill::cli
