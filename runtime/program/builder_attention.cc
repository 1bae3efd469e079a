// The attention layers of Builder (builder.h): MultiHeadSelfAttention and a
// pre-norm TransformerEncoderLayer. They are compositions of fc, reshape,
// transpose, matmul, softmax, layer_norm, gelu and elementwise_add ops, each
// with its gradient op, so append_backward needs nothing of its own here.
#include <cmath>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/op_desc.h"

namespace rill {

Var Builder::MultiHeadSelfAttention(const Var& x, int heads, const std::optional<Var>& key_mask) {
  RILL_CHECK(x.shape.size() == 3, kInvalidArgument, "multi-head self-attention: input ", x.name,
             " must be [N, T, E], is ", ShapeToString(x.shape));
  const int64_t tokens = x.shape[1];
  const int64_t width = x.shape[2];
  RILL_CHECK(tokens > 0 && width > 0, kInvalidArgument, "multi-head self-attention: input ", x.name,
             " ", ShapeToString(x.shape), " needs known T and E");
  RILL_CHECK(heads >= 1 && width % heads == 0, kInvalidArgument,
             "multi-head self-attention: input ", x.name, " width ", width, " does not split into ",
             heads, " heads");
  const int64_t head_width = width / heads;
  // [N, T, E] -> [N, T, H, E/H] -> [N, H, T, E/H]: one matrix per head.
  auto split_heads = [&](const Var& y) {
    return Transpose(Reshape(y, {-1, tokens, heads, head_width}), {0, 2, 1, 3});
  };
  Var q = split_heads(Fc(x, static_cast<int>(width), Activation::kNone, /*num_flatten_dims=*/2));
  // The keys get no bias: q (k_j + b) adds q b to every score of a row, which
  // softmax cancels, so its gradient is zero up to rounding, which Adam would
  // scale up to full steps.
  Var key_weight = Parameter(main_->UniqueName("fc") + ".w", {width, width},
                             Initializer::XavierUniform(), x.dtype);
  Var k = split_heads(AppendOp("mul", {{"X", {x}}, {"Y", {key_weight}}}, {{"Out", 1}},
                               [](proto::OpDesc* op) { SetAttr(op, "x_num_col_dims", 2); })[0]);
  Var v = split_heads(Fc(x, static_cast<int>(width), Activation::kNone, /*num_flatten_dims=*/2));
  // Scores [N, H, T, T]: query i's row holds its dot products with every key.
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_width));
  Var scores = MatMul(q, k, /*transpose_x=*/false, /*transpose_y=*/true, scale);
  Var weights = key_mask ? MaskedSoftmax(scores, *key_mask, -1) : Softmax(scores, -1);
  Var context = MatMul(weights, v);  // [N, H, T, E/H]
  Var merged = Reshape(Transpose(context, {0, 2, 1, 3}), {-1, tokens, width});
  return Fc(merged, static_cast<int>(width), Activation::kNone, /*num_flatten_dims=*/2);
}

Var Builder::TransformerEncoderLayer(const Var& x, int heads, int ffn_hidden, float dropout,
                                     const std::optional<Var>& key_mask) {
  RILL_CHECK(x.shape.size() == 3 && x.shape[2] > 0, kInvalidArgument,
             "transformer encoder layer: input ", x.name, " must be [N, T, E] with a known E, is ",
             ShapeToString(x.shape));
  RILL_CHECK(ffn_hidden >= 1, kInvalidArgument, "transformer encoder layer: ffn_hidden ",
             ffn_hidden, " must be positive");
  RILL_CHECK(dropout >= 0 && dropout < 1, kInvalidArgument, "transformer encoder layer: dropout ",
             dropout, " must be in [0, 1)");
  const int width = static_cast<int>(x.shape[2]);
  auto maybe_dropout = [&](const Var& y) { return dropout > 0 ? Dropout(y, dropout) : y; };
  // Pre-norm: each sublayer reads a normalised copy of the residual stream
  // and adds its result to it, so the stream itself is never normalised.
  Var attended = MultiHeadSelfAttention(LayerNorm(x, /*begin_norm_axis=*/2), heads, key_mask);
  Var h = Add(x, maybe_dropout(attended));
  Var hidden = Fc(LayerNorm(h, /*begin_norm_axis=*/2), ffn_hidden, Activation::kGelu, 2);
  Var ffn = Fc(hidden, width, Activation::kNone, 2);
  return Add(h, maybe_dropout(ffn));
}

}  // namespace rill
