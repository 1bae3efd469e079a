// The recurrent layers of Builder (builder.h): Lstm and Gru, fused into one
// op each, or the same cells built from existing ops with shared weights —
// unrolled over the steps into a static graph, or as the body of a While loop.
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

// One step's mask: `keep` 1 for the sequences still running and 0 for those
// past their length ([N]), `drop` = 1 - keep.
struct StepMask {
  Var keep, drop;
};

StepMask MaskOf(Builder& b, const Var& column) {
  const Var keep = b.Reshape(column, {-1});
  return {keep, b.Scale(keep, -1, 1)};
}

// Every step's masks (unrolled); none without a length.
std::vector<StepMask> StepMasks(Builder& b, const std::optional<Var>& length, int64_t steps,
                                DataType dtype) {
  if (!length) return {};
  std::vector<StepMask> masks;
  for (const Var& column :
       b.Split(b.SequenceMask(*length, steps, dtype), static_cast<int>(steps), 1)) {
    masks.push_back(MaskOf(b, column));
  }
  return masks;
}

// A step's new state where the sequence still runs, else zero: the step's
// output, and the first term of its kept state. `next` itself without a mask.
Var Running(Builder& b, const StepMask* mask, const Var& next) {
  return mask == nullptr ? next : b.Mul(next, mask->keep, 0);
}

// The state after a step: `running` (Running's) plus the previous state where
// the sequence has ended (the masks are 0 or 1: exact). `running` itself
// without a mask or a previous state (an empty Var: zero, the first step).
Var Kept(Builder& b, const StepMask* mask, const Var& running, const Var& previous) {
  if (mask == nullptr || previous.name.empty()) return running;
  return b.Add(running, b.Mul(previous, mask->drop, 0));
}

// One step of a layer: its output, and the states after it.
struct CellStep {
  Var out, h, c;
};

// The LSTM cell on x_t [N, D] from states h, c (empty Vars: zero, where the
// unrolled layer's first step leaves their terms out). Gates i, f, g, o.
CellStep LstmCell(Builder& b, const RecurrentWeights& w, const Var& x_t, const Var& h, const Var& c,
                  const StepMask* mask) {
  Var pre = b.Add(b.MatMul(x_t, w.input), w.bias);
  if (!h.name.empty()) pre = b.Add(pre, b.MatMul(h, w.hidden));
  const std::vector<Var> g = b.Split(pre, 4, 1);
  const Var ig = b.Mul(b.Sigmoid(g[0]), b.Tanh(g[2]));
  const Var next_c = c.name.empty() ? ig : b.Add(b.Mul(b.Sigmoid(g[1]), c), ig);
  const Var out = Running(b, mask, b.Mul(b.Sigmoid(g[3]), b.Tanh(next_c)));
  const Var kept_c = Kept(b, mask, Running(b, mask, next_c), c);
  return {out, Kept(b, mask, out, h), kept_c};
}

// The GRU cell (gates r, z, n as ops/nn/gru_op.cc describes); an empty h is zero.
CellStep GruCell(Builder& b, const RecurrentWeights& w, const Var& x_t, const Var& h,
                 const StepMask* mask) {
  const Var pre = b.Add(b.MatMul(x_t, w.input), w.bias);
  const std::vector<Var> gx = b.Split(pre, 3, 1);  // r, z, n of the input side
  Var next;
  if (h.name.empty()) {  // no recurrent term
    const Var n = b.Tanh(gx[2]);
    next = b.Mul(b.Scale(b.Sigmoid(gx[1]), -1, 1), n);
  } else {
    const std::vector<Var> gh = b.Split(b.MatMul(h, w.hidden), 3, 1);
    const Var r = b.Sigmoid(b.Add(gx[0], gh[0]));
    const Var z = b.Sigmoid(b.Add(gx[1], gh[1]));
    const Var n = b.Tanh(b.Add(gx[2], b.Mul(r, gh[2])));
    next = b.Add(b.Mul(b.Scale(z, -1, 1), n), b.Mul(z, h));  // (1 - z) n + z h
  }
  const Var out = Running(b, mask, next);
  return {out, Kept(b, mask, out, h), Var{}};
}

CellStep Cell(Builder& b, bool lstm, const RecurrentWeights& w, const Var& x_t, const Var& h,
              const Var& c, const StepMask* mask) {
  return lstm ? LstmCell(b, w, x_t, h, c, mask) : GruCell(b, w, x_t, h, mask);
}

// The cells unrolled over the steps into a static graph.
RecurrentOutputs Unrolled(Builder& b, bool lstm, const Var& x, const RecurrentWeights& w,
                          int64_t steps, int64_t input, const std::optional<Var>& length) {
  const std::vector<Var> xs = b.Split(x, static_cast<int>(steps), 1);
  const std::vector<StepMask> masks = StepMasks(b, length, steps, x.dtype);
  std::vector<Var> outs;
  Var h, c;  // zero before the first step
  for (int64_t t = 0; t < steps; ++t) {
    const StepMask* mask = masks.empty() ? nullptr : &masks[static_cast<size_t>(t)];
    const CellStep step =
        Cell(b, lstm, w, b.Reshape(xs[static_cast<size_t>(t)], {-1, input}), h, c, mask);
    h = step.h;
    c = step.c;
    outs.push_back(b.Reshape(step.out, {-1, 1, step.out.shape.back()}));
  }
  return {b.Concat(outs, 1), h, c};
}

// The cell as the body of a While loop over the steps, its counter picking
// each step of x (and of the mask) with read_step; Out written step by step
// with write_step when wanted. The states start as zeros of x's batch.
RecurrentOutputs Looped(Builder& b, bool lstm, const Var& x, const RecurrentWeights& w, int hidden,
                        int64_t steps, const std::optional<Var>& length, bool sequence_output) {
  const Var step = b.Constant({1}, 0, DataType::kInt64);
  const Var end = b.Constant({1}, static_cast<float>(steps), DataType::kInt64);
  const Var more = b.LessThan(step, end);
  const Var h = b.ConstantBatchSizeLike(x, {-1, hidden}, 0, x.dtype);
  const Var c = lstm ? b.ConstantBatchSizeLike(x, {-1, hidden}, 0, x.dtype) : Var{};
  const Var out =
      sequence_output ? b.ConstantBatchSizeLike(x, {-1, steps, hidden}, 0, x.dtype) : Var{};
  std::optional<Var> mask;
  if (length) mask = b.SequenceMask(*length, steps, x.dtype);
  b.While(more, [&](Builder& b) {
    std::optional<StepMask> m;
    if (mask) m = MaskOf(b, b.ReadStep(*mask, step));
    const CellStep next = Cell(b, lstm, w, b.ReadStep(x, step), h, c, m ? &*m : nullptr);
    b.Assign(next.h, h);
    if (lstm) b.Assign(next.c, c);
    if (sequence_output) b.WriteStep(out, next.out, step);
    b.Increment(step);
    b.Assign(b.LessThan(step, end), more);
  });
  return {out, h, c};
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

RnnForm ParseRnnForm(const std::string& name) {
  if (name == "fused") return RnnForm::kFused;
  if (name == "unrolled") return RnnForm::kUnrolled;
  RILL_CHECK(name == "while", kInvalidArgument, "unknown recurrent form \"", name,
             "\" (expected fused, unrolled or while)");
  return RnnForm::kWhile;
}

Var Builder::SequenceMask(const Var& length, int64_t maxlen, DataType dtype) {
  return AppendOp("sequence_mask", {{"X", {length}}}, {{"Y", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "maxlen", static_cast<int>(maxlen));
    SetAttr(op, "out_dtype", std::string(DataTypeName(dtype)));
  })[0];
}

RecurrentOutputs Builder::Lstm(const Var& x, int hidden, RnnForm form,
                               const std::optional<Var>& length, bool sequence_output) {
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
  switch (form) {
    case RnnForm::kFused: {
      auto outs = AppendOp("lstm", RecurrentInputs(x, w, length),
                           {{"Out", 1}, {"LastH", 1}, {"LastC", 1}, {"Gates", 1}, {"Cells", 1}});
      return {outs[0], outs[1], outs[2]};
    }
    case RnnForm::kUnrolled: return Unrolled(*this, true, x, w, steps, input, length);
    case RnnForm::kWhile: return Looped(*this, true, x, w, hidden, steps, length, sequence_output);
  }
  Fail(ErrorCode::kInvalidArgument, "lstm: unknown form ", static_cast<int>(form));
}

RecurrentOutputs Builder::Gru(const Var& x, int hidden, RnnForm form,
                              const std::optional<Var>& length, bool sequence_output) {
  const auto [steps, input] = StepsAndInput("gru", x, hidden);
  const RecurrentWeights w =
      MakeRecurrentWeights(*this, main_->UniqueName("gru"), x, input, hidden, 3);
  switch (form) {
    case RnnForm::kFused: {
      auto outs = AppendOp("gru", RecurrentInputs(x, w, length),
                           {{"Out", 1}, {"LastH", 1}, {"Gates", 1}, {"HiddenProduct", 1}});
      return {outs[0], outs[1], Var{}};
    }
    case RnnForm::kUnrolled: return Unrolled(*this, false, x, w, steps, input, length);
    case RnnForm::kWhile: return Looped(*this, false, x, w, hidden, steps, length, sequence_output);
  }
  Fail(ErrorCode::kInvalidArgument, "gru: unknown form ", static_cast<int>(form));
}

}  // namespace rill
