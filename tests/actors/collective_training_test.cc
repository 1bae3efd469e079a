// Collective data parallelism across processes, the ranks as threads of this
// process (each with its own scope, executor and process group over
// loopback): float64 models (an MLP, a CNN, a sparse embedding) trained 20
// steps with Adam by 2 and 3 ranks of 1 and 2 places, each rank on its slice
// of every global batch, end within 1e-9 (relative) of one executor trained
// on the whole global batch, with the same bits on every rank and from run to
// run; parameters are broadcast from rank 0 first (the other ranks start from
// other seeds). With 2 places per rank the merge is hierarchical (the places
// reduce, then the process merges once); with allreduce between places the
// plan refuses, naming the strategy to use. With int8 compression across
// processes the merged gradients are the mean of the ranks' codes read back,
// with error feedback, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <tuple>
#include <vector>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/process_group.h"
#include "runtime/graph/data_parallel.h"
#include "runtime/graph/gradient_compression.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/ports.h"
#include "tests/testing/small_models.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using testing::CyclicLabels;
using testing::RandomTensor;
using testing::SmallModel;
using namespace std::chrono_literals;

constexpr int kSteps = 20;
constexpr int64_t kRowsPerRank = 6;
constexpr int64_t kFuseBytes = 256 * 1024;

struct Trained {
  std::vector<std::string> names;
  std::vector<Tensor> values;
};

Trained Parameters(const Program& main, const Scope& scope) {
  Trained t;
  for (const auto& var : main.desc().blocks(0).vars()) {
    if (!var.parameter()) continue;
    t.names.push_back(var.name());
    t.values.push_back(scope.GetTensor(var.name()).Clone());
  }
  return t;
}

ExecutionStrategy OneThread() {
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.blas_threads = 1;
  return strategy;
}

// One executor on the whole global batch of world * kRowsPerRank rows.
Trained TrainAlone(const SmallModel& model, int world) {
  Program main, startup;
  Builder b(&main, &startup, 11);
  Var loss = model.build(b);
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ParallelExecutor exe(main.desc(), &scope, {.places = {Place::Cpu()}, .strategy = OneThread()});
  for (int s = 0; s < kSteps; ++s) exe.Run(model.feeds(s, world * kRowsPerRank), {loss.name});
  return Parameters(main, scope);
}

// Rank `rank` of `world`: its slice of every global batch, gradients averaged
// over the ranks. Seeds differ by rank: the broadcast must make them agree.
Trained TrainRank(const SmallModel& model, int rank, int world, const std::string& master,
                  int64_t fuse_bytes, int places) {
  Program main, startup;
  Builder b(&main, &startup, rank == 0 ? 11 : 100 + static_cast<uint64_t>(rank));
  Var loss = model.build(b);
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ProcessGroupOptions options;
  options.rank = rank;
  options.world_size = world;
  options.master = master;
  options.token = "token";
  auto group = std::make_shared<ProcessGroup>(options);
  BroadcastPersistables(*group, main.desc(), &scope);
  ProcessGroup::Install(&scope, group);
  const proto::ProgramDesc program = AddProcessAllreduce(main.desc(), 0, fuse_bytes);
  BuildStrategy build;
  build.reduce = ReduceStrategy::kReduce;
  build.fuse_bytes = fuse_bytes;
  ParallelExecutor exe(program, &scope,
                       {.places = std::vector<Place>(static_cast<size_t>(places), Place::Cpu()),
                        .strategy = OneThread(),
                        .build = build});
  for (int s = 0; s < kSteps; ++s) {
    FeedList feeds = model.feeds(s, world * kRowsPerRank);
    for (auto& [name, value] : feeds)
      value = value.Slice(rank * kRowsPerRank, (rank + 1) * kRowsPerRank);
    exe.Run(feeds, {loss.name});
  }
  return Parameters(main, scope);
}

// Trains `world` ranks (threads) and checks them against one executor on the
// global batch and against each other; returns rank 0's parameters.
Trained ExpectRanksMatchOneProcess(const SmallModel& model, int world, int64_t fuse_bytes,
                                   int places = 1) {
  const Trained alone = TrainAlone(model, world);
  const std::string master = StrCat("127.0.0.1:", testing::ClosedLoopbackPort());
  std::vector<std::future<Trained>> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::async(std::launch::async, [=] {
      return TrainRank(model, r, world, master, fuse_bytes, places);
    }));
  }
  std::vector<Trained> got;
  for (auto& rank : ranks) got.push_back(rank.get());
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(got[r].names, alone.names);
    if (got[r].names != alone.names) return got[0];
    for (size_t i = 0; i < alone.names.size(); ++i) {
      EXPECT_LE(testing::RelativeDifference(got[r].values[i], alone.values[i]), 1e-9)
          << "rank " << r << ", " << alone.names[i];
    }
    if (r > 0) testing::ExpectBitEqual(got[0].values, got[r].values, StrCat("rank ", r));
  }
  return got[0];
}

// (model, ranks, places per rank)
class CollectiveModelTest : public ::testing::TestWithParam<std::tuple<std::string, int, int>> {};

TEST_P(CollectiveModelTest, RanksMatchOneProcessOnTheGlobalBatch) {
  const auto& [name, world, places] = GetParam();
  ExpectRanksMatchOneProcess(testing::SmallModelByName(name), world, kFuseBytes, places);
}

INSTANTIATE_TEST_SUITE_P(Models, CollectiveModelTest,
                         ::testing::Combine(::testing::Values("mlp", "cnn", "sparse"),
                                            ::testing::Values(2, 3), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return StrCat(std::get<0>(info.param), "_", std::get<1>(info.param),
                                         "ranks_", std::get<2>(info.param), "places");
                         });

TEST(CollectiveTrainingTest, ThreeRanksWithOneCollectivePerGradient) {
  ExpectRanksMatchOneProcess(testing::SmallMlp(), 3, 0);
}

TEST(CollectiveTrainingTest, ThreeRanksOfTwoPlacesWithOneCollectivePerGradient) {
  ExpectRanksMatchOneProcess(testing::SmallEmbedding(/*sparse=*/true), 3, 0, 2);
}

TEST(CollectiveTrainingTest, RunsAreBitIdenticalFromRunToRun) {
  const Trained first = ExpectRanksMatchOneProcess(testing::SmallEmbedding(true), 2, kFuseBytes, 2);
  const Trained second =
      ExpectRanksMatchOneProcess(testing::SmallEmbedding(true), 2, kFuseBytes, 2);
  testing::ExpectBitEqual(first.values, second.values, "the second run");
  const Trained cnn_first = ExpectRanksMatchOneProcess(testing::SmallCnn(), 2, kFuseBytes);
  const Trained cnn_second = ExpectRanksMatchOneProcess(testing::SmallCnn(), 2, kFuseBytes);
  testing::ExpectBitEqual(cnn_first.values, cnn_second.values, "the second CNN run");
}

// Every place would hold its own merged copy: the plan refuses before any rank
// waits on the others.
TEST(CollectiveTrainingTest, PlacesThatAllreduceAreRefusedNamingTheStrategy) {
  Program main, startup;
  Builder b(&main, &startup, 11);
  Var loss = testing::SmallMlp().build(b);
  Adam(0.01f).Minimize(b, loss);
  const proto::ProgramDesc program = AddProcessAllreduce(main.desc(), 0, 0);
  BuildStrategy build;
  build.reduce = ReduceStrategy::kAllReduce;
  try {
    PlanDataParallel(program, 0, 2, build);
    FAIL() << "planned";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("needs the reduce strategy"), std::string::npos)
        << error.what();
  }
}

// --gradient-compression across processes. With a zero learning rate every
// step sees the same gradients, so what the compressed merge must give is
// known from each rank's own gradient (one executor on its rows, no group):
// step 1 the mean of the ranks' int8 codes read back, step 2 the same of the
// gradients plus what step 1's codes dropped (error feedback). fc_0.w (6144
// values) is compressed, fc_0.b (96, under kCompressionMinElements) is sent
// whole.
constexpr int64_t kWide = 64;

Var BuildWideMlp(Builder& b) {
  Var x = b.Data("x", {-1, kWide});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(x, 96, Activation::kRelu);
  return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
}

FeedList RankFeeds(int rank) {
  const int64_t rows = 2 * kRowsPerRank;
  FeedList feeds = {{"x", RandomTensor({rows, kWide}, 900, -1, 1, DataType::kFloat32)},
                    {"label", CyclicLabels(rows, 1, 4)}};
  for (auto& [name, value] : feeds)
    value = value.Slice(rank * kRowsPerRank, (rank + 1) * kRowsPerRank).Clone();
  return feeds;
}

// Rank `rank`'s fc_0.w and fc_0.b gradients over `steps` steps (with a group:
// after the merge), each step fetched.
std::vector<std::vector<Tensor>> WideGradients(int rank, std::shared_ptr<ProcessGroup> group,
                                               int steps) {
  Program main, startup;
  Builder b(&main, &startup, 11);
  Var loss = BuildWideMlp(b);
  SGD(0.0f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  proto::ProgramDesc program = main.desc();
  if (group) {
    ProcessGroup::Install(&scope, group);
    program = AddProcessAllreduce(program, 0, 0, GradientCompression::kInt8);
  }
  ParallelExecutor exe(program, &scope, {.places = {Place::Cpu()}, .strategy = OneThread()});
  std::vector<std::vector<Tensor>> fetched;
  for (int s = 0; s < steps; ++s) {
    fetched.push_back(exe.Run(RankFeeds(rank), {"fc_0.w@GRAD", "fc_0.b@GRAD"}));
  }
  return fetched;
}

// The mean over ranks of what int8 codes of gradients[r] + residuals[r] read
// back, summed in rank order; updates the residuals.
Tensor ExpectedCompressedMean(const std::vector<Tensor>& gradients,
                              std::vector<std::vector<float>>* residuals) {
  const int64_t n = gradients[0].numel();
  Tensor mean(DataType::kFloat32, gradients[0].shape());
  std::vector<float> sum(static_cast<size_t>(n), 0.0f), part(static_cast<size_t>(n));
  for (size_t r = 0; r < gradients.size(); ++r) {
    auto& residual = (*residuals)[r];
    if (residual.empty()) residual.assign(static_cast<size_t>(n), 0.0f);
    Dequantize(QuantizeWithFeedback(gradients[r].data<float>(), residual.data(), n,
                                    GradientCompression::kInt8),
               part.data());
    for (int64_t i = 0; i < n; ++i) sum[i] += part[i];
  }
  const float scale = 1.0f / static_cast<float>(gradients.size());
  for (int64_t i = 0; i < n; ++i) mean.mutable_data<float>()[i] = sum[i] * scale;
  return mean;
}

TEST(CollectiveTrainingTest, CompressedMergeIsTheMeanOfTheRanksCodesWithErrorFeedback) {
  constexpr int kWorld = 2;
  std::vector<std::vector<std::vector<Tensor>>> alone;
  for (int r = 0; r < kWorld; ++r) alone.push_back(WideGradients(r, nullptr, 1));
  const std::string master = StrCat("127.0.0.1:", testing::ClosedLoopbackPort());
  std::vector<std::future<std::vector<std::vector<Tensor>>>> runs;
  for (int r = 0; r < kWorld; ++r) {
    runs.push_back(std::async(std::launch::async, [=] {
      ProcessGroupOptions options;
      options.rank = r;
      options.world_size = kWorld;
      options.master = master;
      options.token = "token";
      return WideGradients(r, std::make_shared<ProcessGroup>(options), 2);
    }));
  }
  std::vector<std::vector<std::vector<Tensor>>> merged;
  for (auto& run : runs) merged.push_back(run.get());

  std::vector<std::vector<float>> residuals(kWorld);
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(StrCat("step ", step + 1));
    const Tensor want_w = ExpectedCompressedMean({alone[0][0][0], alone[1][0][0]}, &residuals);
    const Tensor& b0 = alone[0][0][1];
    const Tensor& b1 = alone[1][0][1];
    Tensor want_b(DataType::kFloat32, b0.shape());
    for (int64_t i = 0; i < b0.numel(); ++i) {
      want_b.mutable_data<float>()[i] = (b0.data<float>()[i] + b1.data<float>()[i]) * 0.5f;
    }
    for (int r = 0; r < kWorld; ++r) {
      testing::ExpectBitEqual({want_w, want_b}, merged[r][step], StrCat("rank ", r));
    }
  }
  // The codes dropped something: step 2 differs from step 1.
  EXPECT_NE(
      std::memcmp(merged[0][0][0].raw_data(), merged[0][1][0].raw_data(), merged[0][0][0].bytes()),
      0);
}

}  // namespace
}  // namespace rill
