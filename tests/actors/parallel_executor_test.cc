// The actor executor against the reference executor: same programs, same
// feeds, bit-identical results; and what happens when things go wrong.
#include "actors/parallel_executor.h"

#include <gtest/gtest.h>

#include <cstring>

#include "runtime/builder.h"
#include "runtime/executor.h"
#include "runtime/optimizer.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::RandomTensor;

struct Mlp {
  Program main, startup;
  Var loss;
};

void BuildMlp(Mlp* m) {
  Builder b(&m->main, &m->startup, 7);
  Var x = b.Data("x", {-1, 12});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(b.Fc(x, 16, Activation::kRelu), 8, Activation::kTanh);
  m->loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
  Adam(1e-2f).Minimize(b, m->loss);
}

FeedList Batch(int step) {
  Tensor x = RandomTensor({6, 12}, 100 + step, -1, 1, DataType::kFloat32);
  Tensor y(DataType::kInt64, {6, 1});
  for (int i = 0; i < 6; ++i) y.mutable_data<int64_t>()[i] = (i + step) % 4;
  return {{"x", x}, {"label", y}};
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

TEST(ParallelExecutorTest, MlpTrainingMatchesReferenceBitForBit) {
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(StrCat(threads, " threads"));
    Mlp m;
    BuildMlp(&m);
    Scope ref_scope, actor_scope;
    Executor reference;
    reference.Run(m.startup.desc(), &ref_scope);
    reference.Run(m.startup.desc(), &actor_scope);
    auto step = reference.Prepare(m.main.desc(), &ref_scope);
    ExecutionStrategy strategy;
    strategy.num_threads = threads;
    ParallelExecutor exe(m.main.desc(), {Place::Cpu()}, &actor_scope, strategy);
    for (int s = 0; s < 5; ++s) {
      auto want = reference.Run(*step, Batch(s), {m.loss.name, "fc_0.w"});
      auto got = exe.Run(Batch(s), {m.loss.name, "fc_0.w"});
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(BitEqual(want[0], got[0])) << "loss at step " << s << ": "
                                             << want[0].GetAsDouble(0) << " vs " << got[0].GetAsDouble(0);
      EXPECT_TRUE(BitEqual(want[1], got[1])) << "fc_0.w at step " << s;
    }
  }
}

}  // namespace
}  // namespace rill
