// Data parallelism on CPU places: N places with the global batch B train to
// the parameters one place reaches with batch B, under both strategies, for
// an MLP, a CNN and an embedding model; uneven and tiny batches; a failing
// place; reproducibility; merges overlapping backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/small_models.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using testing::CyclicLabels;
using testing::RandomTensor;
constexpr DataType kF64 = DataType::kFloat64;

using Model = testing::SmallModel;
using testing::SmallMlp;

// Trains `steps` steps on `places` places and returns the scope's parameters.
struct Trained {
  std::vector<std::string> names;
  std::vector<Tensor> values;
  std::vector<double> losses;
};

// With `persistables`, every persistable variable (parameters, running
// statistics, optimizer state: the scope's copy, place 0's), not only the parameters.
Trained Train(const Model& model, int places, ReduceStrategy reduce, int64_t batch, int steps = 20,
              int64_t fuse_bytes = 256 * 1024, bool persistables = false) {
  Program main, startup;
  Builder b(&main, &startup, 11);
  Var loss = model.build(b);
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.blas_threads = 1;
  BuildStrategy build;
  build.reduce = reduce;
  build.fuse_bytes = fuse_bytes;
  ParallelExecutor exe(
      main.desc(), &scope,
      {.places = std::vector<Place>(places, Place::Cpu()), .strategy = strategy, .build = build});
  Trained t;
  for (int s = 0; s < steps; ++s) {
    t.losses.push_back(exe.Run(model.feeds(s, batch), {loss.name})[0].GetAsDouble(0));
  }
  for (const auto& var : main.desc().blocks(0).vars()) {
    if (!(persistables ? var.persistable() : var.parameter())) continue;
    t.names.push_back(var.name());
    t.values.push_back(scope.GetTensor(var.name()).Clone());
  }
  return t;
}

// ||a - b|| / ||a|| for each parameter.
void ExpectClose(const Trained& want, const Trained& got, double tolerance) {
  ASSERT_EQ(want.names, got.names);
  for (size_t i = 0; i < want.names.size(); ++i) {
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < want.values[i].numel(); ++k) {
      const double a = want.values[i].GetAsDouble(k);
      const double d = a - got.values[i].GetAsDouble(k);
      diff += d * d;
      norm += a * a;
    }
    EXPECT_LE(std::sqrt(diff / std::max(norm, 1e-300)), tolerance) << want.names[i];
  }
  for (size_t s = 0; s < want.losses.size(); ++s) {
    EXPECT_NEAR(want.losses[s], got.losses[s], 1e-9 * (1 + std::abs(want.losses[s])))
        << "loss at step " << s;
  }
}

bool BitEqual(const Trained& a, const Trained& b) {
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (std::memcmp(a.values[i].raw_data(), b.values[i].raw_data(), a.values[i].bytes()) != 0) {
      return false;
    }
  }
  return a.losses == b.losses;
}

class DataParallelTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, ReduceStrategy>> {};

TEST_P(DataParallelTest, PlacesWithTheGlobalBatchTrainLikeOnePlace) {
  const auto& [name, places, reduce] = GetParam();
  const Model model = testing::SmallModelByName(name);
  const Trained one = Train(model, 1, reduce, 16);
  const Trained many = Train(model, places, reduce, 16);
  ExpectClose(one, many, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Models, DataParallelTest,
    ::testing::Combine(::testing::Values("mlp", "cnn", "looped_lstm", "embedding", "sparse"),
                       ::testing::Values(2, 4),
                       ::testing::Values(ReduceStrategy::kAllReduce, ReduceStrategy::kReduce)),
    [](const auto& info) {
      return StrCat(std::get<0>(info.param), std::get<1>(info.param), "Places",
                    std::get<2>(info.param) == ReduceStrategy::kReduce ? "Reduce" : "AllReduce");
    });

TEST(DataParallelEdgeTest, UnevenAndTinyBatchesTrainLikeOnePlace) {
  for (int64_t batch : {7, 3, 1}) {
    for (int places : {2, 4}) {
      SCOPED_TRACE(StrCat("batch ", batch, " on ", places, " places"));
      const Trained one = Train(SmallMlp(), 1, ReduceStrategy::kAllReduce, batch, 5);
      const Trained many = Train(SmallMlp(), places, ReduceStrategy::kAllReduce, batch, 5);
      ExpectClose(one, many, 1e-5);
    }
  }
}

// ||a - b|| / ||a|| of the largest of the variables named `prefix`...
double LargestRelativeDifference(const Trained& a, const Trained& b, const std::string& prefix) {
  double largest = 0;
  for (size_t i = 0; i < a.names.size(); ++i) {
    if (!a.names[i].starts_with(prefix)) continue;
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < a.values[i].numel(); ++k) {
      const double d = a.values[i].GetAsDouble(k) - b.values[i].GetAsDouble(k);
      diff += d * d;
      norm += a.values[i].GetAsDouble(k) * a.values[i].GetAsDouble(k);
    }
    largest = std::max(largest, std::sqrt(diff / std::max(norm, 1e-300)));
  }
  return largest;
}

// sync_batch_norm: N places normalise with the whole batch's statistics, so
// they train like one place on it — parameters, running statistics and
// optimizer state — for even and uneven splits and both strategies; on one
// place it is batch_norm. Plain batch_norm on N places (each its own slice)
// does not, which shows the comparison can fail.
TEST(SyncBatchNormTest, PlacesTrainLikeOnePlaceOnTheWholeBatch) {
  const Model sync = testing::SmallBatchNormCnn(/*sync=*/true);
  const Model plain = testing::SmallBatchNormCnn(/*sync=*/false);
  for (ReduceStrategy reduce : {ReduceStrategy::kAllReduce, ReduceStrategy::kReduce}) {
    for (const auto& [places, batch] : {std::pair{2, 16}, std::pair{3, 7}}) {
      SCOPED_TRACE(StrCat(places, " places, batch ", batch,
                          reduce == ReduceStrategy::kReduce ? ", reduce" : ", allreduce"));
      const Trained one = Train(sync, 1, reduce, batch, 8, 256 * 1024, true);
      const Trained many = Train(sync, places, reduce, batch, 8, 256 * 1024, true);
      ExpectClose(one, many, 1e-9);
      const Trained each_own = Train(plain, places, reduce, batch, 8, 256 * 1024, true);
      EXPECT_GT(LargestRelativeDifference(one, each_own, "batch_norm"), 1e-3);
    }
  }
  const Trained batch_norm = Train(plain, 1, ReduceStrategy::kAllReduce, 16, 8, 256 * 1024, true);
  const Trained one = Train(sync, 1, ReduceStrategy::kAllReduce, 16, 8, 256 * 1024, true);
  ExpectClose(batch_norm, one, 1e-9);
}

TEST(DataParallelEdgeTest, SparseEmbeddingGradientsAreSelectedRowsAndTouchOnlyTheirRows) {
  Program main, startup;
  Builder b(&main, &startup, 11);
  Var loss = testing::SmallEmbedding(/*sparse=*/true).build(b);
  Adam(0.01f).Minimize(b, loss);
  const proto::VarDesc* grad = FindVarDesc(main.desc(), 0, "embedding_0.w@GRAD");
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(grad->kind(), proto::SELECTED_ROWS);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  const Tensor before = scope.GetTensor("embedding_0.w").Clone();
  ParallelExecutor exe(main.desc(), &scope, {.places = {Place::Cpu(), Place::Cpu()}});
  Tensor ids = testing::MakeTensor<int64_t>({4, 1}, {2, 5, 2, 9});
  exe.Run({{"ids", ids}, {"label", CyclicLabels(4, 0, 3)}}, {loss.name});
  const Tensor& after = scope.GetTensor("embedding_0.w");
  for (int64_t row = 0; row < 20; ++row) {
    bool changed = false;
    for (int64_t j = 0; j < 6; ++j)
      changed |= after.GetAsDouble(row * 6 + j) != before.GetAsDouble(row * 6 + j);
    EXPECT_EQ(changed, row == 2 || row == 5 || row == 9) << "row " << row;
  }
}

TEST(DataParallelEdgeTest, RepeatedRunsAreBitIdentical) {
  for (ReduceStrategy reduce : {ReduceStrategy::kAllReduce, ReduceStrategy::kReduce}) {
    EXPECT_TRUE(
        BitEqual(Train(SmallMlp(), 4, reduce, 16, 10), Train(SmallMlp(), 4, reduce, 16, 10)));
  }
}

TEST(DataParallelEdgeTest, FusedAndUnfusedMergesAgree) {
  const Trained fused = Train(SmallMlp(), 2, ReduceStrategy::kAllReduce, 16, 10, 1 << 20);
  const Trained single = Train(SmallMlp(), 2, ReduceStrategy::kAllReduce, 16, 10, 0);
  ExpectClose(single, fused, 1e-12);
}

// Out = X, failing when X holds a negative value: with the batch split, only
// the place whose slice holds it fails.
void NonNegativeCopyKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  for (int64_t i = 0; i < x.numel(); ++i) {
    RILL_CHECK(x.data<double>()[i] >= 0, kInvalidArgument, "negative input at ", i);
  }
  ctx.Output("Out")->CopyFrom(x);
}
RILL_REGISTER_OP(test_non_negative_copy, OpSchema("test_non_negative_copy")
                                             .Doc("Out = X; fails on a negative element.")
                                             .Input("X", "input")
                                             .Output("Out", "copy")
                                             .InferShape(SameShapeAs("X", "Out"))
                                             .CpuKernel(NonNegativeCopyKernel)
                                             .DefaultGrad());
void NonNegativeCopyGradKernel(KernelContext& ctx) {
  ctx.Output("X@GRAD")->CopyFrom(ctx.Input("Out@GRAD"));
}
RILL_REGISTER_OP(test_non_negative_copy_grad, OpSchema("test_non_negative_copy_grad")
                                                  .Doc("X@GRAD = Out@GRAD.")
                                                  .Input("X", "forward X")
                                                  .Input("Out", "forward Out", kOptional)
                                                  .Input("Out@GRAD", "gradient of Out")
                                                  .Output("X@GRAD", "gradient of X", kOptional)
                                                  .InferShape(SameShapeAs("X", "X@GRAD"))
                                                  .CpuKernel(NonNegativeCopyGradKernel));

TEST(DataParallelEdgeTest, AFailingPlaceFailsTheStepAndTheNextStepWorks) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var x = b.Data("x", {-1, 4}, kF64);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var checked = b.AppendOp("test_non_negative_copy", {{"X", {x}}}, {{"Out", 1}})[0];
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(checked, 3), label));
  SGD(0.1f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.watchdog_timeout = std::chrono::milliseconds(2000);
  ParallelExecutor exe(main.desc(), &scope,
                       {.places = {Place::Cpu(), Place::Cpu()}, .strategy = strategy});
  Tensor bad = RandomTensor({4, 4}, 9, 0, 1);
  bad.mutable_data<double>()[13] = -1;  // row 3: place 1's slice
  try {
    exe.Run({{"x", bad}, {"label", CyclicLabels(4, 0, 3)}}, {loss.name});
    FAIL() << "expected the place's error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test_non_negative_copy"), std::string::npos) << what;
    EXPECT_NE(what.find("place 1"), std::string::npos) << what;
  }
  const auto out = exe.Run(
      {{"x", RandomTensor({4, 4}, 10, 0, 1)}, {"label", CyclicLabels(4, 1, 3)}}, {loss.name});
  EXPECT_TRUE(std::isfinite(out[0].GetAsDouble(0)));
}

TEST(DataParallelEdgeTest, MergesStartWhileBackwardStillRuns) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var loss = SmallMlp().build(b);
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  BuildStrategy build;
  build.fuse_bytes = 0;  // a merge per gradient
  ParallelExecutor exe(
      main.desc(), &scope,
      {.places = {Place::Cpu(), Place::Cpu()}, .strategy = strategy, .build = build});
  exe.Run(SmallMlp().feeds(0, 8), {loss.name});
  const IterationStats stats = exe.last_stats();
  EXPECT_EQ(stats.collectives, 6);  // three fc layers, weight and bias each
  // The last layer's gradients are complete long before the first layer's.
  EXPECT_GE(stats.collectives_overlapping_backward, 1);
}

TEST(DataParallelEdgeTest, FetchesAreMerged) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var x = b.Data("x", {-1, 2}, kF64);
  Var doubled = b.Scale(x, 2);
  Var total = b.Mean(doubled);
  Scope scope;
  ParallelExecutor exe(main.desc(), &scope, {.places = std::vector<Place>(3, Place::Cpu())});
  EXPECT_EQ(exe.MergeFor(doubled.name), FetchMerge::kConcat);
  EXPECT_EQ(exe.MergeFor(total.name), FetchMerge::kMean);
  Tensor in = testing::MakeTensor<double>({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  const auto out = exe.Run({{"x", in}}, {doubled.name, total.name});
  EXPECT_EQ(testing::ToDoubles(out[0]), (std::vector<double>{2, 4, 6, 8, 10, 12, 14, 16, 18, 20}));
  EXPECT_DOUBLE_EQ(out[1].GetAsDouble(0), 11.0);  // the mean over all 5 rows
}

}  // namespace
}  // namespace rill
