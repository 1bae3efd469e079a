// Agreement cases of the fused recurrent ops' CUDA kernels (ops/nn/rnn_cuda.cu):
// lstm, gru and their gradients, float32 and float64, with lengths (a full
// sequence, a short one, an empty one) and without, output gradients
// present and absent; and the ops of a recurrent While loop (read_step,
// write_step, increment, fill_constant_batch_size_like, sequence_mask).
//
// Tolerances. The GEMMs (the input projection, each step's recurrent
// product, the weight gradients) sum in cuBLAS's order on the GPU and
// OpenBLAS's on the CPU; exp is CUDA's (a few ulp from glibc's, and the CPU's
// float32 activations use glibc's vector exp). Over 5 steps the differences
// stay within a few hundred roundings: atol/rtol 1e-4 (float32) and 1e-10
// (float64). Bias@GRAD sums rows in order on both, from d_pre values that
// differ only by those roundings.
#include <vector>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::MakeTensor;
using testing::RandomTensor;

constexpr int64_t kBatch = 3, kSteps = 5, kInput = 4, kHidden = 6;

std::map<std::string, Tensor> Weights(int gates, uint64_t seed, DataType t, bool bias) {
  std::map<std::string, Tensor> in = {
      {"X", RandomTensor({kBatch, kSteps, kInput}, seed, -1, 1, t)},
      {"InputWeight", RandomTensor({kInput, gates * kHidden}, seed + 1, -0.5, 0.5, t)},
      {"HiddenWeight", RandomTensor({kHidden, gates * kHidden}, seed + 2, -0.5, 0.5, t)}};
  if (bias) in["Bias"] = RandomTensor({gates * kHidden}, seed + 3, -0.5, 0.5, t);
  return in;
}

void AddLength(std::map<std::string, Tensor>* in) {
  (*in)["Length"] = MakeTensor<int64_t>({kBatch}, {kSteps, 2, 0});
}

void AddRnnCases(std::vector<Case>* cases, bool lstm) {
  const int gates = lstm ? 4 : 3;
  const std::string op = lstm ? "lstm" : "gru";
  const std::vector<std::string> forward_outputs =
      lstm ? std::vector<std::string>{"Out", "LastH", "LastC", "Gates", "Cells"}
           : std::vector<std::string>{"Out", "LastH", "Gates", "HiddenProduct"};
  const std::vector<std::string> grads = {"X@GRAD", "InputWeight@GRAD", "HiddenWeight@GRAD",
                                          "Bias@GRAD"};
  const Shape states = {kBatch, kSteps, kHidden}, last = {kBatch, kHidden};
  uint64_t seed = lstm ? 100 : 200;
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    const double tol = t == DataType::kFloat32 ? 1e-4 : 1e-10;
    for (bool lengths : {false, true}) {
      std::map<std::string, Tensor> fwd = Weights(gates, seed, t, true);
      if (lengths) AddLength(&fwd);
      cases->push_back({op, fwd, forward_outputs, tol, tol});
      for (bool dout : {true, false}) {
        std::map<std::string, Tensor> in = Weights(gates, seed + 10, t, false);
        if (lengths) AddLength(&in);
        in["Out"] = RandomTensor(states, seed + 14, -1, 1, t);
        in["Gates"] = RandomTensor({kBatch, kSteps, gates * kHidden}, seed + 15, 0.05, 0.95, t);
        in[lstm ? "Cells" : "HiddenProduct"] = RandomTensor(states, seed + 16, -1.5, 1.5, t);
        if (dout) in["Out@GRAD"] = RandomTensor(states, seed + 17, -1, 1, t);
        in["LastH@GRAD"] = RandomTensor(last, seed + 18, -1, 1, t);
        if (lstm && dout) in["LastC@GRAD"] = RandomTensor(last, seed + 19, -1, 1, t);
        cases->push_back({op + "_grad", in, grads, tol, tol});
      }
      seed += 20;
    }
  }
}

// A loop's ops: a step read and written (axis 1 and 0), their gradients
// (with and without Out@GRAD), the counter, the zero state, the mask. They
// move or fill bytes: exact.
void AddStepCases(std::vector<Case>* cases) {
  using Attrs = std::vector<std::pair<std::string, proto::Attr>>;
  const Tensor index = MakeTensor<int64_t>({1}, {3});
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (int64_t axis : {1, 0}) {
      const Attrs attrs = {{"axis", IntAttr("axis", axis)}};
      const Shape seq = {4, 5, 3};
      const Shape step = axis == 1 ? Shape{4, 3} : Shape{5, 3};
      const Tensor x = RandomTensor(seq, 300 + axis, -1, 1, t);
      const Tensor value = RandomTensor(step, 310 + axis, -1, 1, t);
      const Tensor dout_seq = RandomTensor(seq, 320 + axis, -1, 1, t);
      const Tensor dout_step = RandomTensor(step, 330 + axis, -1, 1, t);
      cases->push_back({"read_step", {{"X", x}, {"Index", index}}, {"Out"}, 0, 0, attrs});
      cases->push_back(
          {"write_step", {{"X", x}, {"Value", value}, {"Index", index}}, {"Out"}, 0, 0, attrs});
      for (bool dout : {true, false}) {
        std::map<std::string, Tensor> in = {{"X", x}, {"Index", index}, {"Out", dout_step}};
        if (dout) in["Out@GRAD"] = dout_step;
        cases->push_back({"read_step_grad", in, {"X@GRAD"}, 0, 0, attrs});
        std::map<std::string, Tensor> w = {
            {"X", x}, {"Value", value}, {"Index", index}, {"Out", x}};
        if (dout) w["Out@GRAD"] = dout_seq;
        cases->push_back({"write_step_grad", w, {"X@GRAD", "Value@GRAD"}, 0, 0, attrs});
      }
    }
  }
  cases->push_back({"increment",
                    {{"X", MakeTensor<int64_t>({1}, {41})}},
                    {"Out"},
                    0,
                    0,
                    {{"step", FloatAttr("step", 2.0f)}}});
  cases->push_back({"increment", {{"X", MakeTensor<double>({1}, {0.5})}}, {"Out"}, 0, 0});
  cases->push_back({"fill_constant_batch_size_like",
                    {{"Input", RandomTensor({7, 3}, 340)}},
                    {"Out"},
                    0,
                    0,
                    {{"shape", IntsAttr("shape", {-1, 4})},
                     {"value", FloatAttr("value", 0.25f)},
                     {"dtype", StringAttr("dtype", "float64")}}});
  cases->push_back({"sequence_mask",
                    {{"X", MakeTensor<int64_t>({4}, {0, 3, 5, 1})}},
                    {"Y"},
                    0,
                    0,
                    {{"maxlen", IntAttr("maxlen", 5)}}});
}

}  // namespace

std::vector<Case> RnnCases() {
  std::vector<Case> cases;
  AddRnnCases(&cases, true);
  AddRnnCases(&cases, false);
  AddStepCases(&cases);
  return cases;
}

}  // namespace rill
