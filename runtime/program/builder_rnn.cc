// The recurrent layers of Builder (builder.h): Lstm and Gru, fused into one
// op each or unrolled over the steps into existing ops with shared weights
// (there is no gradient through While blocks, so the unrolled form is static).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/op_desc.h"

namespace rill {
namespace {

// The parameters of one recurrent layer.
struct RecurrentWeights {
  Var input, hidden, bias;
};

// x's [steps, input] sizes, checked known.
std::pair<int64_t, int64_t> StepsAndInput(const char* layer, const Var& x, int hidden) {
  RILL_CHECK(x.shape.size() == 3 && x.shape[1] > 0 && x.shape[2] > 0, kInvalidArgument, layer,
             ": input ", x.name, " must be [N, T, D] with known T and D, is ",
             ShapeToString(x.shape));
  RILL_CHECK(hidden > 0, kInvalidArgument, layer, ": hidden size ", hidden, " must be positive");
  return {x.shape[1], x.shape[2]};
}

// The layer's parameters, declared (and initialised in the startup program).
RecurrentWeights MakeRecurrentWeights(Builder& b, const std::string& name, const Var& x,
                                      int64_t input, int hidden, int gates) {
  const int64_t width = static_cast<int64_t>(gates) * hidden;
  RecurrentWeights w;
  w.input = b.Parameter(name + ".w_x", {input, width}, Initializer::XavierUniform(), x.dtype);
  w.hidden = b.Parameter(name + ".w_h", {hidden, width}, Initializer::XavierUniform(), x.dtype);
  w.bias = b.Parameter(name + ".b", {width}, Initializer::Constant(0), x.dtype);
  return w;
}

// One step's masks of the unrolled layers: `keep` 1 for the sequences still
// running and 0 for those past their length ([N]), `drop` = 1 - keep.
struct StepMask {
  Var keep, drop;
};

// Every step's masks; none without a length.
std::vector<StepMask> StepMasks(Builder& b, const std::optional<Var>& length, int64_t steps,
                                DataType dtype) {
  if (!length) return {};
  std::vector<StepMask> masks;
  for (const Var& column :
       b.Split(b.SequenceMask(*length, steps, dtype), static_cast<int>(steps), 1)) {
    const Var keep = b.Reshape(column, {-1});
    masks.push_back({keep, b.Scale(keep, -1, 1)});
  }
  return masks;
}

// A step's new state where the sequence still runs, else zero: the step's
// output, and the first term of its kept state. `next` itself without masks.
Var Running(Builder& b, const std::vector<StepMask>& masks, int64_t t, const Var& next) {
  return masks.empty() ? next : b.Mul(next, masks[static_cast<size_t>(t)].keep, 0);
}

// The state after step t: `running` (Running's) plus the previous state where
// the sequence has ended (the masks are 0 or 1: exact). At the first step,
// or without masks, `running` itself (the state before the first step is 0).
Var Kept(Builder& b, const std::vector<StepMask>& masks, int64_t t, const Var& running,
         const Var& previous) {
  if (masks.empty() || t == 0) return running;
  return b.Add(running, b.Mul(previous, masks[static_cast<size_t>(t)].drop, 0));
}

// The layer's input slots, with Length when given.
VarSlots RecurrentInputs(const Var& x, const RecurrentWeights& w,
                         const std::optional<Var>& length) {
  VarSlots inputs = {
      {"X", {x}}, {"InputWeight", {w.input}}, {"HiddenWeight", {w.hidden}}, {"Bias", {w.bias}}};
  if (length) inputs.push_back({"Length", {*length}});
  return inputs;
}

}  // namespace

Var Builder::SequenceMask(const Var& length, int64_t maxlen, DataType dtype) {
  return AppendOp("sequence_mask", {{"X", {length}}}, {{"Y", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "maxlen", static_cast<int>(maxlen));
    SetAttr(op, "out_dtype", std::string(DataTypeName(dtype)));
  })[0];
}

RecurrentOutputs Builder::Lstm(const Var& x, int hidden, bool fused,
                               const std::optional<Var>& length) {
  const auto [steps, input] = StepsAndInput("lstm", x, hidden);
  const RecurrentWeights w =
      MakeRecurrentWeights(*this, main_->UniqueName("lstm"), x, input, hidden, 4);
  // The forget gate's bias starts at 1 (Jozefowicz et al. 2015; Keras'
  // unit_forget_bias), so that early in training the cell keeps its state:
  // the startup program overwrites the bias's zeros with [0, 1, 0, 0] per gate.
  const std::string zeros = w.bias.name + ".zeros", ones = w.bias.name + ".ones";
  for (const auto& [name, value] : {std::pair{zeros, 0.0f}, std::pair{ones, 1.0f}}) {
    Declare(startup_, name, {hidden}, x.dtype);
    proto::OpDesc* fill = startup_->root()->add_ops();
    fill->set_type("fill_constant");
    SetOutput(fill, "Out", {name});
    SetAttr(fill, "shape", std::vector<int64_t>{hidden});
    SetAttr(fill, "dtype", std::string(DataTypeName(x.dtype)));
    SetAttr(fill, "value", value);
  }
  proto::OpDesc* concat = startup_->root()->add_ops();
  concat->set_type("concat");
  SetInput(concat, "X", {zeros, ones, zeros, zeros});
  SetOutput(concat, "Out", {w.bias.name});
  SetAttr(concat, "axis", 0);
  if (fused) {
    auto outs = AppendOp("lstm", RecurrentInputs(x, w, length),
                         {{"Out", 1}, {"LastH", 1}, {"LastC", 1}, {"Gates", 1}, {"Cells", 1}});
    return {outs[0], outs[1], outs[2]};
  }
  std::vector<Var> xs = Split(x, static_cast<int>(steps), 1);
  const std::vector<StepMask> masks = StepMasks(*this, length, steps, x.dtype);
  std::vector<Var> outs;
  Var h, c;
  for (int64_t t = 0; t < steps; ++t) {
    Var pre = Add(MatMul(Reshape(xs[static_cast<size_t>(t)], {-1, input}), w.input), w.bias);
    if (t > 0) pre = Add(pre, MatMul(h, w.hidden));  // h_{-1} = 0
    const std::vector<Var> g = Split(pre, 4, 1);     // i, f, g, o
    const Var ig = Mul(Sigmoid(g[0]), Tanh(g[2]));
    const Var next_c = t > 0 ? Add(Mul(Sigmoid(g[1]), c), ig) : ig;  // c_{-1} = 0
    const Var out = Running(*this, masks, t, Mul(Sigmoid(g[3]), Tanh(next_c)));
    c = Kept(*this, masks, t, Running(*this, masks, t, next_c), c);
    h = Kept(*this, masks, t, out, h);
    outs.push_back(Reshape(out, {-1, 1, hidden}));
  }
  return {Concat(outs, 1), h, c};
}

RecurrentOutputs Builder::Gru(const Var& x, int hidden, bool fused,
                              const std::optional<Var>& length) {
  const auto [steps, input] = StepsAndInput("gru", x, hidden);
  const RecurrentWeights w =
      MakeRecurrentWeights(*this, main_->UniqueName("gru"), x, input, hidden, 3);
  if (fused) {
    auto outs = AppendOp("gru", RecurrentInputs(x, w, length),
                         {{"Out", 1}, {"LastH", 1}, {"Gates", 1}, {"HiddenProduct", 1}});
    return {outs[0], outs[1], Var{}};
  }
  std::vector<Var> xs = Split(x, static_cast<int>(steps), 1);
  const std::vector<StepMask> masks = StepMasks(*this, length, steps, x.dtype);
  std::vector<Var> outs;
  Var h;
  for (int64_t t = 0; t < steps; ++t) {
    Var pre = Add(MatMul(Reshape(xs[static_cast<size_t>(t)], {-1, input}), w.input), w.bias);
    const std::vector<Var> gx = Split(pre, 3, 1);  // r, z, n of the input side
    Var next;
    if (t == 0) {  // h_{-1} = 0: no recurrent term
      const Var n = Tanh(gx[2]);
      next = Mul(Scale(Sigmoid(gx[1]), -1, 1), n);
    } else {
      const std::vector<Var> gh = Split(MatMul(h, w.hidden), 3, 1);
      const Var r = Sigmoid(Add(gx[0], gh[0]));
      const Var z = Sigmoid(Add(gx[1], gh[1]));
      const Var n = Tanh(Add(gx[2], Mul(r, gh[2])));
      next = Add(Mul(Scale(z, -1, 1), n), Mul(z, h));  // (1 - z) n + z h
    }
    const Var out = Running(*this, masks, t, next);
    h = Kept(*this, masks, t, out, h);
    outs.push_back(Reshape(out, {-1, 1, hidden}));
  }
  return {Concat(outs, 1), h, Var{}};
}

}  // namespace rill
