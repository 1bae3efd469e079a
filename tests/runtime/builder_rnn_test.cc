// The recurrent layers of the builder: the fused lstm and gru ops against the
// same cells unrolled over the steps into split, matmul, elementwise and
// activation ops (their outputs and every gradient, in float64), the cells
// looped in a While block against the unrolled ones (bit for bit), and the
// parameters both variants declare.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "rill/backward.h"
#include "rill/builder.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/op_desc.h"

namespace rill {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace builder_rnn_test {

constexpr int64_t kBatch = 3, kSteps = 4, kInput = 5;
constexpr int kHidden = 6;

struct Built {
  Program main, startup;
  std::vector<std::string> fetches;  // outputs, then the gradients of x and the parameters
};

// x (a parameter, to get its gradient) through the layer; the loss weighs
// every output (Out, the last states) so that each gets a gradient, or with
// last_only the last hidden state alone (a classifier's: the gradients of
// Out and of the last cell are then absent, which the fused ops read as zero).
// With `lengths`, the sequences are padded: the feed "length" gives their steps.
void Build(Built* built, bool lstm, RnnForm form, bool last_only, bool lengths = false) {
  Builder b(&built->main, &built->startup, 7);
  Var x =
      b.Parameter("x", {kBatch, kSteps, kInput}, Initializer::Uniform(-1, 1), DataType::kFloat64);
  std::optional<Var> length;
  if (lengths) length = b.Data("length", {-1}, DataType::kInt64);
  const RecurrentOutputs r =
      lstm ? b.Lstm(x, kHidden, form, length) : b.Gru(x, kHidden, form, length);
  std::vector<Var> outs = {r.last_hidden};
  if (!last_only) outs.push_back(r.out);
  if (lstm && !last_only) outs.push_back(r.last_cell);
  std::vector<Var> terms;
  for (const Var& v : outs) {
    terms.push_back(b.Mean(b.Mul(b.Scale(v, 1.5f, 0.25f), v)));
    built->fetches.push_back(v.name);
  }
  const Var loss = b.Sum(terms);
  const std::vector<ParamGrad> grads = AppendBackward(&built->main, loss.name);
  for (const ParamGrad& g : grads) built->fetches.push_back(g.grad);
}

void ExpectClose(const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.GetAsDouble(i), g = got.GetAsDouble(i);
    EXPECT_NEAR(g, w, 1e-12 * std::max(1.0, std::abs(w))) << what << " element " << i;
  }
}

// Sequences of 4, 2 and 0 steps (of kSteps = 4) where the layer takes lengths.
FeedList LengthFeed() {
  Tensor length(DataType::kInt64, {kBatch});
  const int64_t steps[kBatch] = {4, 2, 0};
  for (int64_t n = 0; n < kBatch; ++n) length.mutable_data<int64_t>()[n] = steps[n];
  return {{"length", length}};
}

// The fused layer (or the looped cells) against the unrolled cells: outputs
// and gradients to 1e-12.
void ExpectFusedMatchesUnrolled(bool lstm, bool last_only, bool lengths = false,
                                RnnForm form = RnnForm::kFused) {
  Built fused, unrolled;
  Build(&fused, lstm, form, last_only, lengths);
  Build(&unrolled, lstm, RnnForm::kUnrolled, last_only, lengths);
  // Same parameters, and the unrolled program made of existing ops only.
  ASSERT_EQ(fused.fetches.size(), unrolled.fetches.size());
  const std::string name = lstm ? "lstm_0" : "gru_0";
  for (const char* suffix : {".w_x", ".w_h", ".b"}) {
    const proto::VarDesc* a = FindVarDesc(fused.main.desc(), 0, name + suffix);
    const proto::VarDesc* b = FindVarDesc(unrolled.main.desc(), 0, name + suffix);
    ASSERT_NE(a, nullptr) << name << suffix;
    ASSERT_NE(b, nullptr) << name << suffix;
    EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString()) << name << suffix;
  }
  for (const auto& op : unrolled.main.desc().blocks(0).ops()) {
    EXPECT_NE(op.type(), lstm ? "lstm" : "gru");
  }
  if (form == RnnForm::kWhile) {  // one loop, which the gradient runs back
    int loops = 0, loop_grads = 0;
    for (const auto& op : fused.main.desc().blocks(0).ops()) {
      EXPECT_NE(op.type(), lstm ? "lstm" : "gru");
      loops += op.type() == "while";
      loop_grads += op.type() == "while_grad";
    }
    EXPECT_EQ(loops, 1);
    EXPECT_EQ(loop_grads, 1);
  }
  Scope fused_scope, unrolled_scope;
  Executor exe;
  exe.Run(fused.startup.desc(), &fused_scope);
  // The LSTM's forget gate's bias starts at 1, the other gates' at 0.
  const Tensor& bias = fused_scope.GetTensor(name + ".b");
  for (int64_t j = 0; j < bias.numel(); ++j) {
    const bool forget = lstm && j / kHidden == 1;
    EXPECT_EQ(bias.GetAsDouble(j), forget ? 1.0 : 0.0) << name << ".b element " << j;
  }
  for (const char* param : {"x", ".w_x", ".w_h", ".b"}) {
    const std::string p = param[0] == '.' ? name + param : param;
    *unrolled_scope.Var(p)->mutable_tensor() = fused_scope.GetTensor(p).Clone();
  }
  const FeedList feeds = lengths ? LengthFeed() : FeedList{};
  const auto want = exe.Run(unrolled.main.desc(), &unrolled_scope, feeds, unrolled.fetches);
  const auto got = exe.Run(fused.main.desc(), &fused_scope, feeds, fused.fetches);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ExpectClose(want[i], got[i], fused.fetches[i]);
    // The loop runs the unrolled graph's ops in the same order (its zero
    // states add exact zeros): the same bits.
    if (form == RnnForm::kWhile) {
      ASSERT_EQ(want[i].bytes(), got[i].bytes());
      EXPECT_EQ(std::memcmp(want[i].raw_data(), got[i].raw_data(), want[i].bytes()), 0)
          << fused.fetches[i];
    }
  }
  // Not all zeros: the comparison sees the recurrence (fetch 0 is the last
  // hidden state, the last fetch the bias gradient).
  EXPECT_GT(std::abs(got[0].GetAsDouble(lengths ? 0 : got[0].numel() - 1)), 1e-3);
  EXPECT_GT(std::abs(got.back().GetAsDouble(0)), 1e-6);
  if (!lengths || last_only) return;
  // Out (fetch 1) is zero past each sequence's length, and the last hidden
  // state (fetch 0) is Out's at its last real step (zero for the empty one).
  const Tensor& last = got[0];
  const Tensor& out = got[1];
  const int64_t steps[kBatch] = {4, 2, 0};
  for (int64_t n = 0; n < kBatch; ++n) {
    for (int64_t t = 0; t < kSteps; ++t) {
      for (int64_t j = 0; j < kHidden; ++j) {
        const double v = out.GetAsDouble((n * kSteps + t) * kHidden + j);
        if (t >= steps[n]) {
          EXPECT_EQ(v, 0.0) << "sequence " << n << " step " << t;
        }
        if (t == steps[n] - 1) {
          EXPECT_EQ(last.GetAsDouble(n * kHidden + j), v);
        }
      }
    }
    if (steps[n] == 0) {
      EXPECT_EQ(last.GetAsDouble(n * kHidden), 0.0);
    }
  }
}

TEST(BuilderRnnTest, FusedLstmMatchesUnrolledCells) {
  ExpectFusedMatchesUnrolled(true, false);
  ExpectFusedMatchesUnrolled(true, true);
}

TEST(BuilderRnnTest, FusedGruMatchesUnrolledCells) {
  ExpectFusedMatchesUnrolled(false, false);
  ExpectFusedMatchesUnrolled(false, true);
}

TEST(BuilderRnnTest, PaddedSequencesFusedMatchUnrolledWithMasks) {
  for (bool lstm : {true, false}) {
    SCOPED_TRACE(lstm ? "lstm" : "gru");
    ExpectFusedMatchesUnrolled(lstm, false, true);
    ExpectFusedMatchesUnrolled(lstm, true, true);
  }
}

TEST(BuilderRnnTest, LoopedCellsMatchUnrolledCells) {
  for (bool lstm : {true, false}) {
    for (bool last_only : {false, true}) {
      for (bool lengths : {false, true}) {
        SCOPED_TRACE(::testing::Message() << (lstm ? "lstm" : "gru") << " last_only " << last_only
                                          << " lengths " << lengths);
        ExpectFusedMatchesUnrolled(lstm, last_only, lengths, RnnForm::kWhile);
      }
    }
  }
}

TEST(BuilderRnnTest, SequenceMaskRefusesLengthsOutsideTheSteps) {
  Program main, startup;
  Builder b(&main, &startup);
  Var mask = b.SequenceMask(b.Data("length", {-1}, DataType::kInt64), 3, DataType::kFloat64);
  EXPECT_EQ(mask.shape, (Shape{-1, 3}));
  Scope scope;
  Tensor good(DataType::kInt64, {2}), bad(DataType::kInt64, {2});
  good.mutable_data<int64_t>()[0] = 3;
  good.mutable_data<int64_t>()[1] = 1;
  bad.mutable_data<int64_t>()[0] = 1;
  bad.mutable_data<int64_t>()[1] = 4;
  const Tensor got = Executor().Run(main.desc(), &scope, {{"length", good}}, {mask.name})[0];
  const double want[] = {1, 1, 1, 1, 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got.GetAsDouble(i), want[i]) << i;
  try {
    Executor().Run(main.desc(), &scope, {{"length", bad}}, {mask.name});
    FAIL() << "a length of 4 for 3 steps passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 is 4, outside [0, 3]"), std::string::npos)
        << e.what();
  }
}

TEST(BuilderRnnTest, InputNeedsKnownStepsAndFeatures) {
  Program main, startup;
  Builder b(&main, &startup);
  EXPECT_THROW(b.Lstm(b.Data("a", {-1, 784}), 8), Error);
  EXPECT_THROW(b.Gru(b.Data("b", {-1, -1, 4}), 8, false), Error);
  const RecurrentOutputs r = b.Gru(b.Data("c", {-1, 28, 28}), 16);
  EXPECT_EQ(r.out.shape, (Shape{-1, 28, 16}));
  EXPECT_EQ(r.last_hidden.shape, (Shape{-1, 16}));
}

}  // namespace builder_rnn_test
}  // namespace rill
