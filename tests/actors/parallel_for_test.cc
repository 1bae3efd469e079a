// ParallelFor (rill/parallel_for.h): parts run once each, on the kernel's
// thread and on the threads the actor executor lends (IdleHelpers), errors
// come back to the kernel, and the kernels that cut their loops into parts
// (GEMMs by rows, matmul by products, gelu, softmax, layer_norm) train a
// Transformer layer bit for bit as the reference executor does.
#include "rill/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "actors/executor/idle_helpers.h"
#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/helper_thread.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using namespace std::chrono_literals;

using testing::HelperThread;

// Waits up to 5 s for `done`.
template <class F>
bool WaitFor(const F& done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

TEST(ParallelForTest, WithoutHelpersThePartsRunInOrderOnThisThread) {
  std::vector<int64_t> order;
  const auto self = std::this_thread::get_id();
  ParallelFor(5, [&](int64_t i) {
    EXPECT_EQ(std::this_thread::get_id(), self);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  ParallelFor(0, [&](int64_t) { ADD_FAILURE() << "no part to run"; });
}

TEST(ParallelForTest, PartsAreCutFromTheSizesOnly) {
  EXPECT_EQ(PartsOf(100, 256), 1);
  EXPECT_EQ(PartsOf(511, 256), 1);
  EXPECT_EQ(PartsOf(1792, 256), 7);
  EXPECT_EQ(PartBegin(10, 3, 0), 0);
  EXPECT_EQ(PartBegin(10, 3, 1), 3);
  EXPECT_EQ(PartBegin(10, 3, 3), 10);
  // Runs of whole blocks of 4, at least 8 items each; the last one shorter.
  std::vector<std::pair<int64_t, int64_t>> runs;
  ParallelRanges(30, 8, 4, [&](int64_t b, int64_t e) { runs.emplace_back(b, e); });
  EXPECT_EQ(runs, (std::vector<std::pair<int64_t, int64_t>>{{0, 8}, {8, 16}, {16, 24}, {24, 30}}));
}

TEST(ParallelForTest, AnotherThreadTakesPartsWhileTheKernelRunsItsOwn) {
  std::atomic<int> wakes{0};
  IdleHelpers helpers([&] { wakes.fetch_add(1); });
  HelperThread helper(helpers);
  ScopedParallelHelpers lend(&helpers);
  const auto kernel = std::this_thread::get_id();
  std::mutex mutex;
  std::vector<int> runs(64, 0);
  std::atomic<int> elsewhere{0};
  ParallelFor(64, [&](int64_t i) {
    if (std::this_thread::get_id() != kernel) elsewhere.fetch_add(1);
    // The first part holds its thread until the helper has taken one.
    if (i == 0) {
      EXPECT_TRUE(WaitFor([&] { return elsewhere.load() > 0; }));
    }
    std::lock_guard<std::mutex> lock(mutex);
    ++runs[static_cast<size_t>(i)];
  });
  EXPECT_EQ(runs, std::vector<int>(64, 1)) << "every part once";
  EXPECT_GT(elsewhere.load(), 0);
  EXPECT_EQ(wakes.load(), 1) << "one wake per offer";
}

TEST(ParallelForTest, AThrowingPartFailsTheLoopAfterThePartsTakenHaveEnded) {
  IdleHelpers helpers([] {});
  HelperThread helper(helpers);
  ScopedParallelHelpers lend(&helpers);
  std::atomic<int> running{0};
  try {
    ParallelFor(32, [&](int64_t i) {
      running.fetch_add(1);
      std::this_thread::sleep_for(200us);
      running.fetch_sub(1);
      if (i == 3) throw std::runtime_error("part 3 failed");
    });
    ADD_FAILURE() << "ParallelFor returned";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 3 failed");
  }
  EXPECT_EQ(running.load(), 0) << "a part still ran after ParallelFor threw";
}

// -- inside the actor executor -------------------------------------------------------

// Out = 2 X in 8 parts; the first part waits until a part ran on another
// thread (the executor's idle stream, woken by the offer), so a run that ends
// proves the executor lends its threads.
std::atomic<int> parts_elsewhere{0};

void DoubleInPartsKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const float* in = x.data<float>();
  float* o = out->Allocate<float>(x.shape());
  const auto kernel = std::this_thread::get_id();
  const bool wait = ctx.Attr<bool>("wait_for_helper");
  ParallelRanges(x.numel(), x.numel() / 8, 1, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() != kernel) parts_elsewhere.fetch_add(1);
    if (b == 0 && wait) {
      RILL_CHECK(WaitFor([] { return parts_elsewhere.load() > 0; }), kTimeout,
                 "no other thread took a part within 5 s");
    }
    for (int64_t i = b; i < e; ++i) o[i] = 2 * in[i];
  });
}

RILL_REGISTER_OP(test_double_in_parts,
                 OpSchema("test_double_in_parts")
                     .Doc("Out = 2 X, in ParallelFor parts.")
                     .Input("X", "input")
                     .Output("Out", "2 X")
                     .Attr("wait_for_helper", false, "the first part waits for another thread's")
                     .InferShape(SameShapeAs("X", "Out"))
                     .CpuKernel(DoubleInPartsKernel));

TEST(ParallelForTest, TheActorExecutorLendsItsIdleThreadsToAKernel) {
  Program main, startup;
  Builder b(&main, &startup, 1);
  Var x = b.Data("x", {-1, 64});
  Var y = b.AppendOp("test_double_in_parts", {{"X", {x}}}, {{"Out", 1}},
                     [](proto::OpDesc* op) { SetAttr(op, "wait_for_helper", true); })[0];
  Scope scope;
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  ParallelExecutor exe(main.desc(), &scope, {.strategy = strategy});
  for (int run = 0; run < 3; ++run) {
    parts_elsewhere.store(0);
    Tensor in =
        testing::RandomTensor({16, 64}, 5 + static_cast<uint64_t>(run), -1, 1, DataType::kFloat32);
    std::vector<Tensor> got = exe.Run({{"x", in}}, {y.name});
    ASSERT_EQ(got.size(), 1u);
    for (int64_t i = 0; i < in.numel(); ++i) {
      ASSERT_EQ(got[0].data<float>()[i], 2 * in.data<float>()[i]) << i;
    }
    EXPECT_GT(parts_elsewhere.load(), 0) << "run " << run;
  }
}

// A Transformer encoder layer on [40, 28, 32]: its fc GEMMs have 1120 rows
// (4 parts), its attention 80 products per matmul, and gelu, softmax and
// layer_norm enough values for several parts each.
struct Encoder {
  Program main, startup;
  Var loss;
};

void BuildEncoder(Encoder* m) {
  Builder b(&m->main, &m->startup, 3);
  Var x = b.Data("x", {-1, 28, 32});
  Var h = b.TransformerEncoderLayer(x, 2, 64);
  m->loss = b.Mean(b.Gelu(b.Fc(h, 16, Activation::kNone, 2)));
  Adam(1e-3f).Minimize(b, m->loss);
}

TEST(ParallelForTest, AnEncoderLayerTrainsOnTwoThreadsBitForBitAsTheReference) {
  Encoder m;
  BuildEncoder(&m);
  Scope ref_scope, actor_scope;
  Executor reference;
  reference.Run(m.startup.desc(), &ref_scope);
  reference.Run(m.startup.desc(), &actor_scope);
  auto step = reference.Prepare(m.main.desc(), &ref_scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  ParallelExecutor exe(m.main.desc(), &actor_scope, {.strategy = strategy});
  const std::vector<std::string> fetches = {m.loss.name, "fc_0.w", "fc_2.w"};
  for (int s = 0; s < 4; ++s) {
    FeedList feeds = {{"x", testing::RandomTensor({40, 28, 32}, 70 + static_cast<uint64_t>(s), -1,
                                                  1, DataType::kFloat32)}};
    auto want = reference.Run(*step, feeds, fetches);
    auto got = exe.Run(feeds, fetches);
    ASSERT_EQ(got.size(), fetches.size());
    for (size_t i = 0; i < fetches.size(); ++i) {
      EXPECT_TRUE(testing::BitEqual(want[i], got[i])) << fetches[i] << " at step " << s;
    }
  }
}

}  // namespace
}  // namespace rill
