// The models of `rill train` (tools/rill/models.cc) on the executors: the
// residual network with batch norm trains bit-identically on the actor and
// reference executors, running statistics included, and so do the LSTM and
// GRU classifiers; with two places each place normalises its own slice and
// keeps its own running statistics (place 0's are the scope's), with either
// merge strategy.
#include "tools/rill/models.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rill/executor.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/training.h"

namespace rill::cli {
namespace {

struct Model {
  Program main, startup;
  Classifier classifier;
};

void Build(Model* m, const std::string& name, RnnForm rnn = RnnForm::kFused) {
  Builder b(&m->main, &m->startup, 5);
  m->classifier = BuildClassifier(b, name, rnn);
  MakeOptimizer("adam", 1e-3f)->Minimize(b, m->classifier.loss);
}

// Rows [begin, end) of a deterministic batch of 8 images and labels for `step`.
FeedList Batch(const Model& m, int step, int64_t begin = 0, int64_t end = 8) {
  const Tensor images = testing::RandomTensor({8, 784}, 50 + step, 0, 1, DataType::kFloat32);
  Tensor labels(DataType::kInt64, {8, 1});
  for (int i = 0; i < 8; ++i) labels.mutable_data<int64_t>()[i] = (3 * i + step) % 10;
  return {{m.classifier.image.name, images.Slice(begin, end).Clone()},
          {m.classifier.label.name, labels.Slice(begin, end).Clone()}};
}

// batch_norm's running means and variances: persistable, not parameters.
std::vector<std::string> RunningStatistics(const Model& m) {
  std::vector<std::string> names;
  for (const auto& var : m.main.desc().blocks(0).vars()) {
    const std::string& n = var.name();
    if (var.persistable() && !var.parameter() && n.starts_with("batch_norm") &&
        (n.ends_with(".mean") || n.ends_with(".variance"))) {
      names.push_back(var.name());
    }
  }
  return names;
}

TEST(ModelsTest, ResnetTrainsBitIdenticallyOnActorAndReferenceExecutors) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(StrCat(threads, " threads"));
    Model m;
    Build(&m, "resnet");
    const std::vector<std::string> stats = RunningStatistics(m);
    ASSERT_EQ(stats.size(), 16u);  // 8 batch norms
    Scope ref_scope, actor_scope;
    Executor reference;
    reference.Run(m.startup.desc(), &ref_scope);
    reference.Run(m.startup.desc(), &actor_scope);
    auto step = reference.Prepare(m.main.desc(), &ref_scope);
    ExecutionStrategy strategy;
    strategy.num_threads = threads;
    ParallelExecutor exe(m.main.desc(), &actor_scope, {.strategy = strategy});
    const std::vector<std::string> fetches = {m.classifier.loss.name, "conv2d_0.w"};
    for (int s = 0; s < 3; ++s) {
      auto want = reference.Run(*step, Batch(m, s), fetches);
      auto got = exe.Run(Batch(m, s), fetches);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(testing::BitEqual(want[0], got[0]))
          << "loss at step " << s << ": " << want[0].GetAsDouble(0) << " vs "
          << got[0].GetAsDouble(0);
      EXPECT_TRUE(testing::BitEqual(want[1], got[1])) << "conv2d_0.w at step " << s;
      for (const std::string& name : stats) {
        EXPECT_TRUE(testing::BitEqual(ref_scope.GetTensor(name), actor_scope.GetTensor(name)))
            << name << " at step " << s;
      }
    }
    // The statistics moved: the comparison is not of untouched initial values.
    EXPECT_NE(ref_scope.GetTensor("batch_norm_0.mean").data<float>()[0], 0.0f);
  }
}

// The recurrent models, fused, unrolled and looped: the same losses and
// recurrent weights, bit for bit, on the reference executor and the actor executor.
TEST(ModelsTest, RecurrentModelsTrainBitIdenticallyOnActorAndReferenceExecutors) {
  for (const std::string name : {"lstm", "gru"}) {
    for (const std::string form : {"fused", "unrolled", "while"}) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(StrCat(name, " ", form, " ", threads, " threads"));
        Model m;
        Build(&m, name, ParseRnnForm(form));
        Scope ref_scope, actor_scope;
        Executor reference;
        reference.Run(m.startup.desc(), &ref_scope);
        reference.Run(m.startup.desc(), &actor_scope);
        const std::string weight = name + "_0.w_h";
        const Tensor initial = ref_scope.GetTensor(weight).Clone();
        auto step = reference.Prepare(m.main.desc(), &ref_scope);
        ExecutionStrategy strategy;
        strategy.num_threads = threads;
        ParallelExecutor exe(m.main.desc(), &actor_scope, {.strategy = strategy});
        const std::vector<std::string> fetches = {m.classifier.loss.name, weight};
        for (int s = 0; s < 3; ++s) {
          auto want = reference.Run(*step, Batch(m, s), fetches);
          auto got = exe.Run(Batch(m, s), fetches);
          ASSERT_EQ(got.size(), 2u);
          EXPECT_TRUE(testing::BitEqual(want[0], got[0]))
              << "loss at step " << s << ": " << want[0].GetAsDouble(0) << " vs "
              << got[0].GetAsDouble(0);
          EXPECT_TRUE(testing::BitEqual(want[1], got[1])) << weight << " at step " << s;
        }
        // The recurrent weights trained: the comparison is not of untouched initial values.
        EXPECT_FALSE(testing::BitEqual(initial, ref_scope.GetTensor(weight)));
      }
    }
  }
}

// Two places, one step on a batch of 8: the scope's running statistics (place
// 0's copy) are what one place computes on rows 0-3 alone, not on all 8 and
// not an average over the places.
TEST(ModelsTest, TwoPlacesKeepTheirOwnRunningStatistics) {
  for (ReduceStrategy strategy : {ReduceStrategy::kAllReduce, ReduceStrategy::kReduce}) {
    SCOPED_TRACE(strategy == ReduceStrategy::kReduce ? "reduce" : "allreduce");
    Model m;
    Build(&m, "resnet");
    Scope slice_scope, whole_scope, places_scope;
    Executor reference;
    for (Scope* scope : {&slice_scope, &whole_scope, &places_scope}) {
      reference.Run(m.startup.desc(), scope);
    }
    BuildStrategy build;
    build.reduce = strategy;
    ParallelExecutor exe(m.main.desc(), &places_scope,
                         {.places = {Place::Cpu(), Place::Cpu()}, .build = build});
    // After the executor is built: it sets OpenBLAS's thread count, which can
    // change how a GEMM rounds.
    reference.Run(m.main.desc(), &slice_scope, Batch(m, 0, 0, 4), {});
    reference.Run(m.main.desc(), &whole_scope, Batch(m, 0), {});
    exe.Run(Batch(m, 0), {m.classifier.loss.name});
    for (const std::string& name : RunningStatistics(m)) {
      EXPECT_TRUE(testing::BitEqual(slice_scope.GetTensor(name), places_scope.GetTensor(name)))
          << name << " " << slice_scope.GetTensor(name).GetAsDouble(0) << " vs "
          << places_scope.GetTensor(name).GetAsDouble(0) << " (whole batch "
          << whole_scope.GetTensor(name).GetAsDouble(0) << ")";
      EXPECT_FALSE(testing::BitEqual(whole_scope.GetTensor(name), places_scope.GetTensor(name)))
          << name;
    }
    // Later steps run (each place updating its own copy) and stay finite.
    for (int s = 1; s < 3; ++s) exe.Run(Batch(m, s), {m.classifier.loss.name});
    const Tensor& variance = places_scope.GetTensor("batch_norm_0.variance");
    for (int64_t i = 0; i < variance.numel(); ++i) {
      EXPECT_TRUE(std::isfinite(variance.data<float>()[i]) && variance.data<float>()[i] > 0);
    }
  }
}

}  // namespace
}  // namespace rill::cli
