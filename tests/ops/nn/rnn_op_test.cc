// Tests of the fused recurrent ops lstm and gru (and their gradients): the
// forward against direct loops over the cell equations, the gradients
// against central differences, padded sequences (Length), and the shape
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct Sizes {
  int64_t n, t, d, h;
};

// The inputs of one op: X [N, T, D], the weights and bias for `gates` gates.
struct RnnCase {
  Sizes s;
  int gates;
  Tensor x, w_input, w_hidden, bias;
  RnnCase(Sizes sizes, int g, uint64_t seed, DataType dtype = DataType::kFloat64)
      : s(sizes),
        gates(g),
        x(RandomTensor({s.n, s.t, s.d}, seed, -1, 1, dtype)),
        w_input(RandomTensor({s.d, g * s.h}, seed + 1, -0.6, 0.6, dtype)),
        w_hidden(RandomTensor({s.h, g * s.h}, seed + 2, -0.6, 0.6, dtype)),
        bias(RandomTensor({g * s.h}, seed + 3, -0.5, 0.5, dtype)) {}

  // [G*H] pre-activations of sequence n at step t: x_t Wx + b + h Wh.
  std::vector<double> Project(const std::vector<double>& x, const std::vector<double>& wx,
                              const std::vector<double>& wh, const std::vector<double>& b,
                              int64_t n, int64_t t, const std::vector<double>& h) const {
    const int64_t width = gates * s.h;
    std::vector<double> pre(b);
    for (int64_t k = 0; k < s.d; ++k) {
      for (int64_t j = 0; j < width; ++j) pre[j] += x[(n * s.t + t) * s.d + k] * wx[k * width + j];
    }
    if (gates == 3) return pre;  // the GRU's recurrent part is added by the caller
    for (int64_t k = 0; k < s.h; ++k) {
      for (int64_t j = 0; j < width; ++j) pre[j] += h[k] * wh[k * width + j];
    }
    return pre;
  }

  std::vector<Tensor> Inputs() const { return {x, w_input, w_hidden, bias}; }
};

// Out [N, T, H] and the last state (h, then c for the LSTM) by direct loops,
// sequence n running lengths[n] steps.
struct Direct {
  std::vector<double> out, last_h, last_c;
};

Direct DirectRnn(const RnnCase& c, const std::vector<int64_t>& lengths) {
  const Sizes& s = c.s;
  const auto x = ToDoubles(c.x), wx = ToDoubles(c.w_input), wh = ToDoubles(c.w_hidden);
  const auto b = ToDoubles(c.bias);
  const int64_t width = c.gates * s.h;
  Direct r;
  r.out.assign(static_cast<size_t>(s.n * s.t * s.h), 0.0);
  for (int64_t n = 0; n < s.n; ++n) {
    std::vector<double> h(s.h, 0.0), cell(s.h, 0.0);
    for (int64_t t = 0; t < lengths[n]; ++t) {
      std::vector<double> pre = c.Project(x, wx, wh, b, n, t, h);
      std::vector<double> next(s.h);
      if (c.gates == 4) {
        for (int64_t j = 0; j < s.h; ++j) {
          cell[j] = Sigmoid(pre[s.h + j]) * cell[j] + Sigmoid(pre[j]) * std::tanh(pre[2 * s.h + j]);
          next[j] = Sigmoid(pre[3 * s.h + j]) * std::tanh(cell[j]);
        }
      } else {
        std::vector<double> hp(width, 0.0);
        for (int64_t k = 0; k < s.h; ++k) {
          for (int64_t j = 0; j < width; ++j) hp[j] += h[k] * wh[k * width + j];
        }
        for (int64_t j = 0; j < s.h; ++j) {
          const double r_j = Sigmoid(pre[j] + hp[j]);
          const double z = Sigmoid(pre[s.h + j] + hp[s.h + j]);
          const double cand = std::tanh(pre[2 * s.h + j] + r_j * hp[2 * s.h + j]);
          next[j] = (1 - z) * cand + z * h[j];
        }
      }
      h = next;
      for (int64_t j = 0; j < s.h; ++j) r.out[(n * s.t + t) * s.h + j] = h[j];
    }
    r.last_h.insert(r.last_h.end(), h.begin(), h.end());
    r.last_c.insert(r.last_c.end(), cell.begin(), cell.end());
  }
  return r;
}

const char* OpType(int gates) { return gates == 4 ? "lstm" : "gru"; }

OpRun ForwardRun(const RnnCase& c, const Tensor* length) {
  OpRun run{OpType(c.gates),
            {{"X", {c.x}},
             {"InputWeight", {c.w_input}},
             {"HiddenWeight", {c.w_hidden}},
             {"Bias", {c.bias}}},
            {{"Out", 1}, {"LastH", 1}, {"Gates", 1}},
            {}};
  if (length != nullptr) run.inputs.push_back({"Length", {*length}});
  if (c.gates == 4) {
    run.outputs.push_back({"LastC", 1});
    run.outputs.push_back({"Cells", 1});
  } else {
    run.outputs.push_back({"HiddenProduct", 1});
  }
  return run;
}

void ExpectAllNear(const std::vector<double>& got, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
  }
}

void ExpectForwardMatches(const RnnCase& c, const std::vector<int64_t>& lengths, bool with_length) {
  const Tensor length = MakeTensor<int64_t>({c.s.n}, lengths);
  auto out = RunOp(ForwardRun(c, with_length ? &length : nullptr));
  const Direct want = DirectRnn(c, lengths);
  const double tol = c.x.dtype() == DataType::kFloat64 ? 1e-12 : 1e-5;
  EXPECT_EQ(out["Out"][0].shape(), (Shape{c.s.n, c.s.t, c.s.h}));
  ExpectAllNear(ToDoubles(out["Out"][0]), want.out, tol, "Out");
  ExpectAllNear(ToDoubles(out["LastH"][0]), want.last_h, tol, "LastH");
  if (c.gates == 4) ExpectAllNear(ToDoubles(out["LastC"][0]), want.last_c, tol, "LastC");
}

TEST(RnnOpTest, ForwardMatchesDirectLoops) {
  for (int gates : {4, 3}) {
    for (DataType dtype : {DataType::kFloat64, DataType::kFloat32}) {
      SCOPED_TRACE(StrCat(OpType(gates), " ", DataTypeName(dtype)));
      const RnnCase c({3, 5, 4, 6}, gates, 10, dtype);
      ExpectForwardMatches(c, {5, 5, 5}, false);
    }
  }
}

// Steps past a sequence's length keep its state and output zeros: the
// sequence's outputs are those of the truncated sequence.
TEST(RnnOpTest, LengthMasksPaddedSteps) {
  for (int gates : {4, 3}) {
    SCOPED_TRACE(OpType(gates));
    const RnnCase c({4, 5, 3, 4}, gates, 20);
    ExpectForwardMatches(c, {3, 0, 5, 1}, true);
  }
}

void CheckGradient(const RnnCase& c, const std::vector<int64_t>* lengths) {
  const OpRun run = ForwardRun(c, nullptr);
  GradientCheck check(run.type);
  for (const auto& [slot, tensors] : run.inputs) check.Input(slot, tensors[0]);
  if (lengths != nullptr) check.Input("Length", MakeTensor<int64_t>({c.s.n}, *lengths));
  for (const auto& [slot, count] : run.outputs) check.Output(slot, count);
  check.Tolerance(1e-8, 1e-6).Run();
}

TEST(RnnOpTest, GradientMatchesNumeric) {
  for (int gates : {4, 3}) {
    SCOPED_TRACE(OpType(gates));
    CheckGradient(RnnCase({2, 4, 3, 3}, gates, 30), nullptr);
    CheckGradient(RnnCase({1, 1, 2, 2}, gates, 40), nullptr);
  }
}

TEST(RnnOpTest, GradientWithLengthsMatchesNumeric) {
  const std::vector<int64_t> lengths = {2, 0, 4};
  for (int gates : {4, 3}) {
    SCOPED_TRACE(OpType(gates));
    CheckGradient(RnnCase({3, 4, 2, 3}, gates, 50), &lengths);
  }
}

void ExpectFails(const OpRun& run, const std::string& part) {
  try {
    RunOp(run);
    ADD_FAILURE() << "no error, expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(RnnOpTest, MismatchedShapesAreNamed) {
  for (int gates : {4, 3}) {
    SCOPED_TRACE(OpType(gates));
    const std::string op = OpType(gates);
    RnnCase c({2, 3, 4, 5}, gates, 70);
    RnnCase bad = c;
    bad.w_input = RandomTensor({3, gates * 5}, 1);
    ExpectFails(ForwardRun(bad, nullptr), op + ": InputWeight");
    bad = c;
    bad.w_hidden = RandomTensor({5, 2 * 5}, 1);
    ExpectFails(ForwardRun(bad, nullptr), op + ": HiddenWeight");
    bad = c;
    bad.bias = RandomTensor({gates * 5 + 1}, 1);
    ExpectFails(ForwardRun(bad, nullptr), op + ": Bias");
    bad = c;
    bad.x = RandomTensor({2, 12}, 1);
    ExpectFails(ForwardRun(bad, nullptr), op + ": X");
    const Tensor wrong_count = MakeTensor<int64_t>({3}, {1, 2, 3});
    ExpectFails(ForwardRun(c, &wrong_count), op + ": Length");
  }
}

TEST(RnnOpTest, LengthOutsideTheStepsIsRefused) {
  const RnnCase c({2, 3, 2, 2}, 4, 80);
  const Tensor too_long = MakeTensor<int64_t>({2}, {1, 4});
  ExpectFails(ForwardRun(c, &too_long), "lstm: Length");
  const Tensor negative = MakeTensor<int64_t>({2}, {-1, 2});
  ExpectFails(ForwardRun(RnnCase({2, 3, 2, 2}, 3, 80), &negative), "gru: Length");
}

}  // namespace
}  // namespace rill::testing
