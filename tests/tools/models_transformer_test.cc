// The Transformer of `rill train --model transformer`
// (tools/rill/models_transformer.cc) on the executors: it trains
// bit-identically on the actor executor (1 and 2 threads) and on the
// reference executor, and with two places (each on half of every batch) it
// ends within 1e-5 (relative, per parameter) of one place on the whole batch,
// the float32 bound of the collective data-parallel test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "rill/executor.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/training.h"
#include "tools/rill/models.h"

namespace rill::cli {
namespace {

struct TransformerModel {
  Program main, startup;
  Classifier classifier;
};

void BuildTransformer(TransformerModel* m) {
  Builder b(&m->main, &m->startup, 7);
  m->classifier = BuildClassifier(b, "transformer");
  MakeOptimizer("adamw", 1e-3f)->Minimize(b, m->classifier.loss);
}

// A deterministic batch of 8 images and labels for `step`.
FeedList TransformerBatch(const TransformerModel& m, int step) {
  return {{m.classifier.image.name,
           testing::RandomTensor({8, 784}, 90 + step, 0, 1, DataType::kFloat32)},
          {m.classifier.label.name, testing::CyclicLabels(8, step, 10)}};
}

std::vector<std::string> ParameterNames(const TransformerModel& m) {
  std::vector<std::string> names;
  for (const auto& var : m.main.desc().blocks(0).vars()) {
    if (var.parameter()) names.push_back(var.name());
  }
  return names;
}

TEST(ModelsTransformerTest, TrainsBitIdenticallyOnActorAndReferenceExecutors) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(StrCat(threads, " threads"));
    TransformerModel m;
    BuildTransformer(&m);
    const std::vector<std::string> params = ParameterNames(m);
    ASSERT_GT(params.size(), 20u);  // 2 encoder layers of 8 fc parameters each, and more
    Scope ref_scope, actor_scope;
    Executor reference;
    reference.Run(m.startup.desc(), &ref_scope);
    reference.Run(m.startup.desc(), &actor_scope);
    auto step = reference.Prepare(m.main.desc(), &ref_scope);
    ExecutionStrategy strategy;
    strategy.num_threads = threads;
    ParallelExecutor exe(m.main.desc(), &actor_scope, {.strategy = strategy});
    const Tensor initial = ref_scope.GetTensor(params[0]).Clone();
    for (int s = 0; s < 3; ++s) {
      auto want = reference.Run(*step, TransformerBatch(m, s), {m.classifier.loss.name});
      auto got = exe.Run(TransformerBatch(m, s), {m.classifier.loss.name});
      ASSERT_EQ(got.size(), 1u);
      EXPECT_TRUE(testing::BitEqual(want[0], got[0]))
          << "loss at step " << s << ": " << want[0].GetAsDouble(0) << " vs "
          << got[0].GetAsDouble(0);
      for (const std::string& name : params) {
        EXPECT_TRUE(testing::BitEqual(ref_scope.GetTensor(name), actor_scope.GetTensor(name)))
            << name << " at step " << s;
      }
    }
    // Training moved the parameters: the comparison is not of initial values.
    EXPECT_FALSE(testing::BitEqual(initial, ref_scope.GetTensor(params[0]))) << params[0];
  }
}

// Trains `steps` steps of 8 images on `places` places; returns the parameters.
std::vector<Tensor> TrainOnPlaces(int places, int steps, std::vector<std::string>* names) {
  TransformerModel m;
  BuildTransformer(&m);
  *names = ParameterNames(m);
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.blas_threads = 1;
  ParallelExecutor exe(m.main.desc(), &scope,
                       {.places = std::vector<Place>(places, Place::Cpu()), .strategy = strategy});
  for (int s = 0; s < steps; ++s) exe.Run(TransformerBatch(m, s), {m.classifier.loss.name});
  std::vector<Tensor> values;
  for (const std::string& name : *names) values.push_back(scope.GetTensor(name).Clone());
  return values;
}

TEST(ModelsTransformerTest, TwoPlacesTrainLikeOnePlaceOnTheWholeBatch) {
  std::vector<std::string> names, two_names, initial_names;
  const std::vector<Tensor> one = TrainOnPlaces(1, 3, &names);
  const std::vector<Tensor> two = TrainOnPlaces(2, 3, &two_names);
  const std::vector<Tensor> initial = TrainOnPlaces(1, 0, &initial_names);
  ASSERT_EQ(names, two_names);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_LE(testing::RelativeDifference(two[i], one[i]), 1e-5) << names[i];
    // Far more than the bound: the comparison is of trained values.
    EXPECT_GT(testing::RelativeDifference(one[i], initial[i]), 1e-4) << names[i];
  }
}

}  // namespace
}  // namespace rill::cli
