// Gradient compression in the data-parallel merge: the merged gradient is the
// sum of each place's quantized contribution (checked against gradients the
// sequential executor computes for each place's rows), residuals carry over
// to the next step, training stays close to float32, byte counters match,
// small gradients stay float32, and selected rows are compressed by value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "runtime/graph/gradient_compression.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using testing::CyclicLabels;
using testing::RandomTensor;
constexpr DataType kF32 = DataType::kFloat32;

FeedList Feeds(int step, int64_t batch) {
  return {{"x", RandomTensor({batch, 40}, 900 + step, -1, 1, kF32)},
          {"label", CyclicLabels(batch, step, 6)}};
}

// x[40] -> fc 64 relu -> fc 6: weights of 2,560 and 384 elements.
Var BuildMlp(Builder& b) {
  Var x = b.Data("x", {-1, 40}, kF32);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(x, 64, Activation::kRelu);
  return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 6), label));
}

BuildStrategy Compressing(GradientCompression kind, int64_t min_elements = 1) {
  BuildStrategy build;
  build.gradient_compression = kind;
  build.compression_min_elements = min_elements;
  return build;
}

ExecutionStrategy TwoThreads() {
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.blas_threads = 1;
  return strategy;
}

// Each place's gradient of `param` for its half of the batch, computed by
// the sequential executor on the place's rows (in a copy of the parameters,
// which the program's optimizer then updates) and scaled by the place's
// share of the batch (as the data-parallel loss scale does).
std::vector<Tensor> PlaceGradients(const Program& main, const Scope& params,
                                   const std::string& param, const FeedList& feeds) {
  std::vector<Tensor> out;
  for (int p = 0; p < 2; ++p) {
    Scope scope;
    for (const auto& var : main.desc().blocks(0).vars()) {
      if (var.persistable())
        *scope.Var(var.name())->mutable_tensor() = params.GetTensor(var.name()).Clone();
    }
    FeedList half;
    for (const auto& [name, value] : feeds) {
      const int64_t rows = value.dim(0);
      half.push_back({name, value.Slice(rows * p / 2, rows * (p + 1) / 2).Clone()});
    }
    const std::vector<Tensor> fetched =
        Executor().Run(main.desc(), &scope, half, {param + "@GRAD"});
    Tensor g = fetched[0].Clone();
    float* v = g.mutable_data<float>();
    for (int64_t i = 0; i < g.numel(); ++i) v[i] *= 0.5f;  // exact: a power of two
    out.push_back(g);
  }
  return out;
}

// With SGD at learning rate 1, a step moves each parameter by exactly the
// merged gradient: the merge's result is read off the parameter.
TEST(CompressedMergeTest, TheMergeSumsEachPlacesQuantizedGradientWithItsResidual) {
  for (GradientCompression kind : {GradientCompression::kInt8, GradientCompression::kInt4}) {
    Program main, startup;
    Builder b(&main, &startup, 5);
    Var loss = BuildMlp(b);
    SGD(1.0f).Minimize(b, loss);
    Scope scope;
    Executor().Run(startup.desc(), &scope);
    // One merge per gradient: place 0 merges fc_0.w's first 1,280 values and
    // place 1 the rest, both on the 256-value grid the check quantizes on.
    BuildStrategy build = Compressing(kind);
    build.fuse_bytes = 0;
    ParallelExecutor exe(
        main.desc(), &scope,
        {.places = {Place::Cpu(), Place::Cpu()}, .strategy = TwoThreads(), .build = build});
    const std::string w = "fc_0.w";
    const int64_t n = scope.GetTensor(w).numel();
    std::vector<std::vector<float>> residual(2, std::vector<float>(static_cast<size_t>(n), 0.0f));
    for (int step = 0; step < 3; ++step) {
      const Tensor before = scope.GetTensor(w).Clone();
      const FeedList feeds = Feeds(step, 16);
      const std::vector<Tensor> grads = PlaceGradients(main, scope, w, feeds);
      exe.Run(feeds, {loss.name});
      std::vector<float> want(static_cast<size_t>(n), 0.0f), raw(static_cast<size_t>(n), 0.0f);
      for (int p = 0; p < 2; ++p) {
        std::vector<float> back(static_cast<size_t>(n));
        QuantizeWithFeedback(grads[p].data<float>(), residual[p].data(), back.data(), n, kind);
        for (int64_t i = 0; i < n; ++i) {
          want[i] += back[i];
          raw[i] += grads[p].data<float>()[i];
        }
      }
      double off = 0, quantization = 0, norm = 0;
      const Tensor& after = scope.GetTensor(w);
      for (int64_t i = 0; i < n; ++i) {
        const double moved = before.data<float>()[i] - after.data<float>()[i];
        off = std::max(off, std::fabs(moved - want[i]));
        quantization = std::max(quantization, std::fabs(static_cast<double>(want[i]) - raw[i]));
        norm = std::max(norm, std::fabs(static_cast<double>(raw[i])));
      }
      // The merge reproduces the quantized sum up to the parameter update's
      // float rounding, far below what quantization itself changed.
      EXPECT_LT(off, 1e-6 * (1 + std::fabs(before.data<float>()[0])) + 2e-7 * norm)
          << GradientCompressionName(kind) << " step " << step;
      EXPECT_GT(quantization, 100 * off) << GradientCompressionName(kind) << " step " << step;
    }
  }
}

struct Trained {
  std::vector<Tensor> values;  // parameters
  IterationStats stats;
};

Trained Train(const BuildStrategy& build, int steps,
              ReduceStrategy reduce = ReduceStrategy::kAllReduce) {
  Program main, startup;
  Builder b(&main, &startup, 5);
  Var loss = BuildMlp(b);
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  BuildStrategy strategy = build;
  strategy.reduce = reduce;
  ParallelExecutor exe(
      main.desc(), &scope,
      {.places = {Place::Cpu(), Place::Cpu()}, .strategy = TwoThreads(), .build = strategy});
  for (int s = 0; s < steps; ++s) exe.Run(Feeds(s, 16), {loss.name});
  Trained t;
  for (const auto& var : main.desc().blocks(0).vars()) {
    if (var.parameter()) t.values.push_back(scope.GetTensor(var.name()).Clone());
  }
  t.stats = exe.last_stats();
  return t;
}

double RelativeDifference(const Trained& a, const Trained& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.values.size(); ++i) {
    for (int64_t k = 0; k < a.values[i].numel(); ++k) {
      const double x = a.values[i].GetAsDouble(k), y = b.values[i].GetAsDouble(k);
      diff += (x - y) * (x - y);
      norm += x * x;
    }
  }
  return std::sqrt(diff / norm);
}

bool BitEqual(const Trained& a, const Trained& b) {
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (std::memcmp(a.values[i].raw_data(), b.values[i].raw_data(), a.values[i].bytes()) != 0) {
      return false;
    }
  }
  return true;
}

TEST(CompressedMergeTest, TrainingStaysCloseToFloat32AndCountsItsBytes) {
  for (ReduceStrategy reduce : {ReduceStrategy::kAllReduce, ReduceStrategy::kReduce}) {
    const Trained none = Train(BuildStrategy{}, 30, reduce);
    const Trained int8 = Train(Compressing(GradientCompression::kInt8, 1000), 30, reduce);
    const Trained int4 = Train(Compressing(GradientCompression::kInt4, 1000), 30, reduce);
    EXPECT_FALSE(BitEqual(none, int8));
    EXPECT_LT(RelativeDifference(none, int8), 0.02);
    EXPECT_LT(RelativeDifference(none, int4), 0.1);
    EXPECT_TRUE(BitEqual(int8, Train(Compressing(GradientCompression::kInt8, 1000), 30, reduce)))
        << "compressed merges are deterministic";
    // Two places, float32: weights 40x64 and 64x6, biases 64 and 6.
    const int64_t all = 2 * 4 * (2560 + 64 + 384 + 6);
    EXPECT_EQ(none.stats.merge_bytes_raw, all);
    EXPECT_EQ(none.stats.merge_bytes, all);
    EXPECT_EQ(int8.stats.merge_bytes_raw, all);
    // Only fc_0.w (2,560 >= 1,000 elements) is compressed: codes + 10 scales.
    EXPECT_EQ(int8.stats.merge_bytes, 2 * (2560 + 10 * 4 + 4 * (64 + 384 + 6)));
    EXPECT_EQ(int4.stats.merge_bytes, 2 * (1280 + 10 * 4 + 4 * (64 + 384 + 6)));
  }
}

TEST(CompressedMergeTest, GradientsUnderTheThresholdStayFloat32) {
  const Trained none = Train(BuildStrategy{}, 5);
  const Trained high = Train(Compressing(GradientCompression::kInt8, 1 << 20), 5);
  EXPECT_TRUE(BitEqual(none, high));
  EXPECT_EQ(high.stats.merge_bytes, high.stats.merge_bytes_raw);
}

TEST(CompressedMergeTest, SelectedRowsAreCompressedByValueAndKeepTheirRows) {
  auto train = [](GradientCompression kind, Tensor* table, IterationStats* stats) {
    Program main, startup;
    Builder b(&main, &startup, 5);
    Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
    Var label = b.Data("label", {-1, 1}, DataType::kInt64);
    Var e = b.Embedding(ids, 50, 16, kF32, /*sparse=*/true);
    Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(e, 3), label));
    SGD(0.5f).Minimize(b, loss);
    Scope scope;
    Executor().Run(startup.desc(), &scope);
    const Tensor before = scope.GetTensor("embedding_0.w").Clone();
    ParallelExecutor exe(main.desc(), &scope,
                         {.places = {Place::Cpu(), Place::Cpu()},
                          .strategy = TwoThreads(),
                          .build = Compressing(kind, 100)});
    Tensor id(DataType::kInt64, {4, 1});
    for (int64_t i = 0; i < 4; ++i)
      id.mutable_data<int64_t>()[i] = std::vector<int64_t>{7, 3, 7, 40}[i];
    exe.Run({{"ids", id}, {"label", CyclicLabels(4, 0, 3)}}, {loss.name});
    *table = scope.GetTensor("embedding_0.w").Clone();
    *stats = exe.last_stats();
    for (int64_t row = 0; row < 50; ++row) {
      bool changed = false;
      for (int64_t j = 0; j < 16; ++j) {
        changed |= table->GetAsDouble(row * 16 + j) != before.GetAsDouble(row * 16 + j);
      }
      EXPECT_EQ(changed, row == 3 || row == 7 || row == 40) << "row " << row;
    }
  };
  Tensor none, int8;
  IterationStats none_stats, int8_stats;
  train(GradientCompression::kNone, &none, &none_stats);
  train(GradientCompression::kInt8, &int8, &int8_stats);
  double diff = 0, max = 0;
  for (int64_t i = 0; i < none.numel(); ++i) {
    diff = std::max(diff, std::fabs(none.GetAsDouble(i) - int8.GetAsDouble(i)));
    max = std::max(max, std::fabs(none.GetAsDouble(i)));
  }
  EXPECT_GT(diff, 0);
  EXPECT_LT(diff, 0.01 * max);
  // Place 0 has rows 7, 3 (two rows), place 1 rows 7, 40: 4 rows of 16 values
  // and their indices; compressed, each place's rows are merged first (one
  // scale per place: 32 values < 256).
  const int64_t dense = 2 * 4 * (16 * 3 + 3);  // the fc's weight and bias, both places
  EXPECT_EQ(none_stats.merge_bytes_raw - dense, 4 * (16 * 4 + 8));
  EXPECT_EQ(int8_stats.merge_bytes - dense, 2 * (32 + 4) + 4 * 8);
}

}  // namespace
}  // namespace rill
