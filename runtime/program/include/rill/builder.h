// Builder: the layers API. It appends ops to a main program and parameter
// initialisers to a startup program, the way Fluid's layers do:
//
//   Program main, startup;
//   Builder b(&main, &startup, /*seed=*/0);
//   Var x = b.Data("x", {-1, 784});
//   Var label = b.Data("label", {-1, 1}, DataType::kInt64);
//   Var h = b.Fc(x, 256, Activation::kRelu);
//   Var logits = b.Fc(h, 10);
//   Var loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
//   Adam(1e-3).Minimize(b, loss);                    // backward + updates
//
// Every op is shape-inferred as it is appended, so a mismatch fails at the
// line that made it, naming the op. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rill/data_type.h"
#include "rill/program.h"
#include "rill/shape.h"

namespace rill {

// A handle to a declared variable of the main program.
struct Var {
  std::string name;
  Shape shape;
  DataType dtype = DataType::kFloat32;
};

// How a parameter is initialised in the startup program.
struct Initializer {
  enum class Kind { kConstant, kUniform, kNormal, kXavierUniform, kXavierNormal };
  Kind kind = Kind::kXavierUniform;
  float a = 0;  // constant value, uniform low, normal mean
  float b = 0;  // uniform high, normal std

  static Initializer Constant(float value) { return {Kind::kConstant, value, 0}; }
  static Initializer Uniform(float low, float high) { return {Kind::kUniform, low, high}; }
  static Initializer Normal(float mean, float std) { return {Kind::kNormal, mean, std}; }
  // Glorot: limit sqrt(6 / (fan_in + fan_out)) (uniform) or std sqrt(2 / (fan_in + fan_out)).
  static Initializer XavierUniform() { return {Kind::kXavierUniform, 0, 0}; }
  static Initializer XavierNormal() { return {Kind::kXavierNormal, 0, 0}; }
};

enum class Activation { kNone, kRelu, kSigmoid, kTanh, kSoftmax, kGelu };

// What a recurrent layer (Builder::Lstm, Builder::Gru) returns.
// How Builder::Lstm and Gru build their cells: one fused op over the whole
// sequence; the cells unrolled over the steps into matmul, split,
// elementwise and activation ops; or those ops as the body of a While loop
// over the steps (read_step / write_step pick each step; the loop's gradient
// runs the body's gradient once per pass, while_op.cc).
enum class RnnForm { kFused, kUnrolled, kWhile };
// "fused", "unrolled" or "while"; throws kInvalidArgument for another name.
RnnForm ParseRnnForm(const std::string& name);

struct RecurrentOutputs {
  Var out;          // [N, T, H], the hidden state after each step
  Var last_hidden;  // [N, H], the hidden state after the last step
  Var last_cell;    // [N, H], the LSTM's cell state after the last step; empty for a GRU
};

// Variable lists per slot, for AppendOp.
using VarSlots = std::vector<std::pair<std::string, std::vector<Var>>>;
using OutputCounts = std::vector<std::pair<std::string, int>>;
using OpAttrs = std::function<void(proto::OpDesc*)>;

class Builder {
 public:
  // Both programs get `seed` as their random seed.
  Builder(Program* main, Program* startup, uint64_t seed = 0);

  Program& main() { return *main_; }
  Program& startup() { return *startup_; }

  // The role ops appended to the main program get from now on (optimizers
  // set ROLE_OPTIMIZE while they append theirs).
  void set_role(proto::OpRole role) { role_ = role; }
  proto::OpRole role() const { return role_; }

  // -- variables ---------------------------------------------------------------
  // A fed input; -1 marks the batch dimension. No gradient flows into it.
  Var Data(const std::string& name, const Shape& shape, DataType dtype = DataType::kFloat32);
  // A trainable parameter, initialised in the startup program.
  Var Parameter(const std::string& name, const Shape& shape, Initializer init,
                DataType dtype = DataType::kFloat32);
  // A persistable, non-trainable variable filled with `value` at startup (learning rate,
  // accumulators).
  Var Persistable(const std::string& name, const Shape& shape, float value,
                  DataType dtype = DataType::kFloat32);
  // A constant computed in the main program each step.
  Var Constant(const Shape& shape, float value, DataType dtype = DataType::kFloat32);
  // A plain variable `name` of the current block, written by later ops (a
  // result to fetch by name, a loop-carried value). Throws if declared there.
  Var Variable(const std::string& name, const Shape& shape, DataType dtype = DataType::kFloat32);
  // The declared variable `name` of the main program.
  Var Lookup(const std::string& name) const;

  // -- generic append ----------------------------------------------------------
  // Appends an op; outputs get fresh names "<type>_N.<slot>" (or the names in
  // `named_outputs`), declared with the shapes inferred by the op.
  std::vector<Var> AppendOp(const std::string& type, const VarSlots& inputs,
                            const OutputCounts& outputs, const OpAttrs& attrs = {});
  // Like AppendOp, with the output slots of `updated` bound to existing
  // variables (state an op updates in place, as batch_norm's running
  // statistics); only the fresh outputs are returned.
  std::vector<Var> AppendOpUpdating(const std::string& type, const VarSlots& inputs,
                                    const OutputCounts& outputs, const VarSlots& updated,
                                    const OpAttrs& attrs = {});
  // Appends an op writing existing variables (in-place updates, optimizers).
  void AppendOpTo(const std::string& type, const VarSlots& inputs, const VarSlots& outputs,
                  const OpAttrs& attrs = {});

  // -- layers ------------------------------------------------------------------
  // x flattened at num_flatten_dims times a [in, size] weight, plus a bias.
  Var Fc(const Var& x, int size, Activation act = Activation::kNone, int num_flatten_dims = 1,
         Initializer weight_init = Initializer::XavierUniform(),
         Initializer bias_init = Initializer::Constant(0));
  // With bias false no bias is added (a convolution followed by batch_norm,
  // whose own bias makes one redundant).
  Var Conv2d(const Var& x, int filters, int kernel_size, int stride = 1, int padding = 0,
             Activation act = Activation::kNone, int groups = 1, bool bias = true);
  Var Pool2d(const Var& x, int kernel_size, const std::string& type = "max", int stride = -1,
             int padding = 0);
  Var Activate(const Var& x, Activation act);
  Var Relu(const Var& x) { return Activate(x, Activation::kRelu); }
  Var Sigmoid(const Var& x) { return Activate(x, Activation::kSigmoid); }
  Var Tanh(const Var& x) { return Activate(x, Activation::kTanh); }
  Var Softmax(const Var& x) { return Activate(x, Activation::kSoftmax); }
  // Softmax along `axis` (negative counts from the end).
  Var Softmax(const Var& x, int axis);
  // Softmax along `axis` where `mask` (x's type, broadcasting to x: its dims
  // aligned to x's last ones, each 1 or x's, e.g. [B, 1, 1, T] for attention
  // scores [B, H, T, T]) is non-zero; masked elements get 0, and a row masked
  // everywhere is all zeros. No gradient flows into the mask.
  Var MaskedSoftmax(const Var& x, const Var& mask, int axis = -1);
  // 0.5 * x * (1 + erf(x / sqrt(2))), the exact GELU.
  Var Gelu(const Var& x) { return Activate(x, Activation::kGelu); }
  // Batch normalisation over the channels (dim 1) of [N, C] or NCHW x
  // (builder_norm.cc): a scale (1) and a bias (0), trained, and a running
  // mean (0) and variance (1), persistable and not trained, which the op
  // updates in place with `momentum` in training; Program::CloneForTest
  // makes it normalise with them. Then `act`.
  // With set_sync_batch_norm(true) (before the layers are built) it is
  // sync_batch_norm (ops/nn/sync_batch_norm_op.cc): in a data-parallel run
  // every place normalises with the statistics of the whole batch, the
  // places' sums merged in the forward and the backward pass, and the running
  // statistics stay alike on every place. Otherwise each place normalises its
  // own slice (as Fluid and PyTorch DDP do by default).
  Var BatchNorm(const Var& x, Activation act = Activation::kNone, float momentum = 0.9f,
                float epsilon = 1e-5f);
  Builder& set_sync_batch_norm(bool sync) {
    sync_batch_norm_ = sync;
    return *this;
  }
  bool sync_batch_norm() const { return sync_batch_norm_; }
  // Each row of x (the dims from begin_norm_axis on, known sizes) normalised,
  // times a scale (1) plus a bias (0) per element of a row, both trained.
  Var LayerNorm(const Var& x, int begin_norm_axis = 1, float epsilon = 1e-5f);
  Var CrossEntropy(const Var& probabilities, const Var& label);
  // Per-example loss [N, 1] from unnormalised logits and int64 labels [N, 1].
  Var SoftmaxWithCrossEntropy(const Var& logits, const Var& label);
  Var Mean(const Var& x);
  // (x - y)^2 per element.
  Var SquareErrorCost(const Var& x, const Var& y);
  // Top-k accuracy of predictions [N, C] against int64 labels [N, 1]: a [1] float.
  Var Accuracy(const Var& predictions, const Var& label, int k = 1);
  Var Dropout(const Var& x, float probability);
  // Recurrent layers over x [N, T, D] (known T and D), zero initial state,
  // `hidden` units (builder_rnn.cc). Parameters "<name>.w_x" [D, G*H],
  // "<name>.w_h" [H, G*H] (Xavier uniform) and "<name>.b" [G*H] (zeros; the
  // LSTM's forget gate's part ones), <name> "lstm_N" or "gru_N". LSTM gates
  // i, f, g, o; GRU gates r, z, n as ops/nn/gru_op.cc describes. The form
  // (RnnForm) changes the graph, not the parameters: every form trains from
  // the same startup program.
  // With `length` (int64 [N], each sequence's steps, <= T: sequences padded
  // to T), the steps past a sequence's length keep its state and output
  // zeros, so last_hidden (and last_cell) are those after its last real
  // step. Unrolled and looped, the steps are masked with SequenceMask.
  // sequence_output false (kWhile only): the loop does not write Out, whose
  // Var is then empty (a classifier needs only the last state).
  RecurrentOutputs Lstm(const Var& x, int hidden, RnnForm form = RnnForm::kFused,
                        const std::optional<Var>& length = std::nullopt,
                        bool sequence_output = true);
  RecurrentOutputs Gru(const Var& x, int hidden, RnnForm form = RnnForm::kFused,
                       const std::optional<Var>& length = std::nullopt,
                       bool sequence_output = true);
  RecurrentOutputs Lstm(const Var& x, int hidden, bool fused,
                        const std::optional<Var>& length = std::nullopt) {
    return Lstm(x, hidden, fused ? RnnForm::kFused : RnnForm::kUnrolled, length);
  }
  RecurrentOutputs Gru(const Var& x, int hidden, bool fused,
                       const std::optional<Var>& length = std::nullopt) {
    return Gru(x, hidden, fused ? RnnForm::kFused : RnnForm::kUnrolled, length);
  }
  // [N, maxlen] of dtype: 1 where step t < length[n] (int64 [N]), else 0.
  Var SequenceMask(const Var& length, int64_t maxlen, DataType dtype = DataType::kFloat32);
  // Rows of a [vocab, dim] table picked by int64 ids. With is_sparse the
  // table's gradient holds only the looked-up rows (selected rows), which
  // SGD and Adam apply to those rows only.
  Var Embedding(const Var& ids, int64_t vocab, int64_t dim, DataType dtype = DataType::kFloat32,
                bool is_sparse = false);
  Var Reshape(const Var& x, const Shape& shape);
  Var Concat(const std::vector<Var>& xs, int axis = 0);
  std::vector<Var> Split(const Var& x, int num, int axis = 0);
  Var Transpose(const Var& x, const std::vector<int64_t>& perm);
  Var Scale(const Var& x, float scale, float bias = 0);
  Var Add(const Var& x, const Var& y, int axis = -1);
  Var Sub(const Var& x, const Var& y, int axis = -1);
  Var Mul(const Var& x, const Var& y, int axis = -1);
  Var Div(const Var& x, const Var& y, int axis = -1);
  Var Sum(const std::vector<Var>& xs);
  // alpha * op(x) op(y) over the last two dims, op transposing when asked;
  // the leading (batch) dims broadcast as numpy's matmul: [B, H, T, D] x
  // [B, H, D, T], [B, T, D] x [D, E], [B, 1, T, D] x [B, H, D, T].
  Var MatMul(const Var& x, const Var& y, bool transpose_x = false, bool transpose_y = false,
             float alpha = 1.0f);

  // -- attention (builder_attention.cc) ----------------------------------------
  // Multi-head self-attention over x [N, T, E] (known T and E, E divisible by
  // `heads`): fc projections (num_flatten_dims 2) to queries, keys (no bias:
  // softmax cancels it) and values, each split into heads [N, H, T, E/H];
  // scores q k^T / sqrt(E/H); softmax over the keys (MaskedSoftmax where
  // `key_mask` is given: x's type, non-zero for the keys attended to,
  // broadcasting to [N, H, T, T], e.g. [N, 1, 1, T]); times the values; heads
  // merged back to [N, T, E]; an output fc.
  Var MultiHeadSelfAttention(const Var& x, int heads,
                             const std::optional<Var>& key_mask = std::nullopt);
  // A pre-norm Transformer encoder layer on x [N, T, E]:
  //   h = x + dropout(MultiHeadSelfAttention(LayerNorm(x), heads, key_mask))
  //   out = h + dropout(Fc(Gelu(Fc(LayerNorm(h), ffn_hidden)), E))
  // LayerNorm over E per token (begin_norm_axis 2); no dropout op at dropout 0.
  Var TransformerEncoderLayer(const Var& x, int heads, int ffn_hidden, float dropout = 0,
                              const std::optional<Var>& key_mask = std::nullopt);

  // -- blocks ------------------------------------------------------------------
  // parallel_do: `body` appends ops to a new sub-block, which runs on `places`
  // places, each reading its slice (along dim 0) of `inputs`; the variables
  // `body` returns come back concatenated in place order. Parameters created
  // in `body` are shared by the places. Reduce over the batch (a mean loss)
  // outside the block, on what it returns. Runs on the actor executor.
  //
  //   auto out = b.ParallelDo(2, {x}, [&](Builder& b) {
  //     return std::vector<Var>{b.Fc(x, 10)};     // x reads the place's slice
  //   });
  std::vector<Var> ParallelDo(int places, const std::vector<Var>& inputs,
                              const std::function<std::vector<Var>(Builder&)>& body);
  // The same over a sub-block already filled (OpenSubBlock / CloseSubBlock)
  // whose results are `outputs` (variables of that block).
  std::vector<Var> ParallelDo(int places, const std::vector<Var>& inputs, int sub_block,
                              const std::vector<Var>& outputs);

  // placeable_block: `body` appends ops to a new sub-block placed on a
  // parameter server (placement PSERVER, index -1: the distribute transpiler
  // chooses; actors/distributed/distributed.md). Run in one process, the block runs once
  // per step in the enclosing scope, exactly as if its ops were inline.
  // `inputs` are what it reads from the rest of the step (gradients, the
  // learning rate), `outputs` what the rest reads back (parameters); both are
  // the op's slots, for readers — dependencies come from the block's ops.
  //
  //   b.PlaceableBlock({grad, lr}, {param}, [&](Builder& b) {
  //     b.AppendOpTo("sgd", {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr}}},
  //                  {{"ParamOut", {param}}});
  //   });
  void PlaceableBlock(const std::vector<Var>& inputs, const std::vector<Var>& outputs,
                      const std::function<void(Builder&)>& body);

  // -- channels and concurrency (CSP; builder_csp.cc) ----------------------------
  //
  //   Var ch = b.MakeChannel({4}, DataType::kFloat32, /*capacity=*/2);
  //   b.Go([&](Builder& b) { b.ChannelSend(ch, b.Constant({4}, 1)); b.ChannelClose(ch); });
  //   auto [x, ok] = b.ChannelRecv(ch);
  //   b.While(ok, [&](Builder& b) { b.Assign(b.Add(sum, x), sum); b.ChannelRecvInto(ch, x, ok); });
  //
  // A channel of `capacity` buffered elements of `shape` (-1: any) and `dtype`.
  Var MakeChannel(const Shape& shape, DataType dtype = DataType::kFloat32, int capacity = 0);
  void ChannelSend(const Var& channel, const Var& x);
  // {value, status}: status is int32[1], 1 for a value, 0 once the channel is closed and drained.
  std::pair<Var, Var> ChannelRecv(const Var& channel);
  // Receives into existing variables (a loop's next value and condition).
  void ChannelRecvInto(const Var& channel, const Var& out, const Var& status);
  void ChannelClose(const Var& channel);
  // Runs the ops `body` appends concurrently with the rest of the block.
  void Go(const std::function<void(Builder&)>& body);
  // Runs the ops `body` appends while `condition` (one element) is non-zero.
  void While(const Var& condition, const std::function<void(Builder&)>& body);
  // The same over a sub-block already filled (OpenSubBlock / CloseSubBlock):
  // for a front end whose blocks are scopes rather than callbacks (Python's
  // `with loop.block():`).
  void Go(int sub_block);
  void While(const Var& condition, int sub_block);

  // Appends a sub-block of the current block and makes it current: the ops
  // appended next go there, until CloseSubBlock(index) (`index`: what this
  // returned) makes its parent current again. Sub-blocks nest; they close
  // innermost first. SubBlock-taking ops (Go, While) then name it.
  int OpenSubBlock();
  void CloseSubBlock(int index);
  // The block ops are appended to now (0: the main block).
  int current_block() const { return block_; }
  // One case of Select: receive (body gets the value and status), send, or default.
  struct SelectCase {
    enum class Kind { kRecv, kSend, kDefault };
    Kind kind = Kind::kDefault;
    Var channel;
    Var value;  // send: the value sent
    std::function<void(Builder&, const Var& value, const Var& status)> body;

    static SelectCase Recv(Var channel,
                           std::function<void(Builder&, const Var& value, const Var& status)> body);
    static SelectCase Send(Var channel, Var value, std::function<void(Builder&)> body);
    static SelectCase Default(std::function<void(Builder&)> body);
  };
  void Select(const std::vector<SelectCase>& cases);
  // The same over sub-blocks already filled (OpenSubBlock / CloseSubBlock),
  // one per case in order (Python's `with select.case(...)`). A receive
  // case's value and status are variables SelectRecvVars declared in this
  // block before its sub-block was opened.
  struct SelectBlock {
    SelectCase::Kind kind = SelectCase::Kind::kDefault;
    Var channel;
    Var value;        // send: the value sent
    Var out, status;  // receive: from SelectRecvVars
    int block = -1;
  };
  std::pair<Var, Var> SelectRecvVars(const Var& channel);
  void Select(const std::vector<SelectBlock>& cases);
  // -- input pipelines ----------------------------------------------------------
  // A variable of kind READER: the trainer sets an InputPipeline in the scope under `name`.
  Var Reader(const std::string& name);
  // Appends a read op filling `fields` (already declared, e.g. by Data) with
  // the reader's next batch. With `first`, the op goes before every op of the
  // current block, so that it runs before the ops that read the batch.
  void Read(const Var& reader, const std::vector<Var>& fields, bool first = false);

  // out = x, for an existing out (a loop-carried variable).
  void Assign(const Var& x, const Var& out);
  // int32 of x's shape: 1 where x < y (y: same shape or one element).
  Var LessThan(const Var& x, const Var& y);
  // counter += step, in place (a loop's counter: one element of any type).
  void Increment(const Var& counter, float step = 1);
  // Step `index` (one int32/int64 element) of x along `axis`: x's shape
  // without that dim. How a loop body reads the step its counter names.
  Var ReadStep(const Var& x, const Var& index, int axis = 1);
  // Writes `value` as step `index` of x along `axis`, in place.
  void WriteStep(const Var& x, const Var& value, const Var& index, int axis = 1);
  // A tensor of `shape` filled with `value` whose dim output_dim (-1 in
  // `shape`) is input's dim input_dim when the op runs: a loop's zero state
  // [batch, hidden] for a batch known only then.
  Var ConstantBatchSizeLike(const Var& input, const Shape& shape, float value,
                            DataType dtype = DataType::kFloat32, int input_dim = 0,
                            int output_dim = 0);

 private:
  // Appends a sub-block of the current block, fills it with `body`, returns its index.
  int SubBlock(const std::function<void(Builder&)>& body);
  // Throws naming `op` unless `sub_block` is a sub-block of the current block.
  void CheckSubBlock(int sub_block, const char* op) const;
  proto::VarDesc* Declare(Program* program, const std::string& name, const Shape& shape,
                          DataType dtype, int block_index = 0);
  void AppendInitializer(const Var& var, Initializer init);

  Program* main_;
  Program* startup_;
  proto::OpRole role_ = proto::ROLE_FORWARD;
  int block_ = 0;  // the main program's block ops go to
  bool sync_batch_norm_ = false;
};

}  // namespace rill
