// L2 regularisation and global-norm clipping (Optimizer::set_l2,
// set_clip_global_norm) on float32 and float64 models, with dense and sparse
// embedding gradients, on the reference Executor and on ParallelExecutor with
// one place and two (both reduce strategies):
//   - each SGD step matches a reference computed here, in double, from the
//     dense gradient the same parameters have (g + l2 * p on the rows a sparse
//     gradient holds, the norm over those values, the clip factor);
//   - a sparse model trains like the same model with is_sparse=false where
//     their definitions agree: every row touched, any optimizer, L2 and clip;
//     clipping alone, any rows; the touched rows of one L2 step. A row the
//     step did not look up gets no decay in the sparse model (Fluid's sparse
//     regularisation) while the dense model decays it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "rill/backward.h"
#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using testing::CyclicLabels;

constexpr int64_t kVocab = 12;
constexpr int64_t kDim = 5;
constexpr int kClasses = 3;
constexpr uint64_t kSeed = 17;
constexpr float kLearningRate = 0.5f;
constexpr const char* kTable = "embedding_0.w";

enum class Runner { kExecutor, kOnePlace, kTwoPlacesAllReduce, kTwoPlacesReduce };
enum class Opt { kSgd, kMomentum, kAdam };

const char* RunnerName(Runner r) {
  switch (r) {
    case Runner::kExecutor: return "Executor";
    case Runner::kOnePlace: return "OnePlace";
    case Runner::kTwoPlacesAllReduce: return "TwoPlacesAllReduce";
    case Runner::kTwoPlacesReduce: return "TwoPlacesReduce";
  }
  return "?";
}

// l2 and clip as written (the optimizer takes them as float32 and widens
// them through their decimal form, so 0.1f stands for 0.1 in a float64 model).
struct Config {
  DataType dtype = DataType::kFloat64;
  bool sparse = false;
  double l2 = 0;
  double clip = 0;
  Opt opt = Opt::kSgd;
};

// ids -> embedding [kVocab, kDim] -> fc 4 tanh -> fc kClasses -> mean softmax cross-entropy.
Var BuildModel(Builder& b, DataType dtype, bool sparse) {
  Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var e = b.Embedding(ids, kVocab, kDim, dtype, sparse);
  Var h = b.Fc(e, 4, Activation::kTanh);
  return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, kClasses), label));
}

FeedList Feeds(const std::vector<int64_t>& ids, int step) {
  const auto n = static_cast<int64_t>(ids.size());
  Tensor t(DataType::kInt64, {n, 1});
  std::memcpy(t.mutable_data<int64_t>(), ids.data(), ids.size() * sizeof(int64_t));
  return {{"ids", t}, {"label", CyclicLabels(n, step, kClasses)}};
}

// Some rows, some of them more than once (rows 0, 2, 3, 5, 6, 8 and 11 untouched).
std::vector<int64_t> SomeRows(int step) {
  if (step % 2 == 0) return {1, 4, 4, 7, 9, 1, 10, 4};
  return {4, 9, 9, 1, 7, 10, 10, 1};
}

// Every row, four of them twice.
std::vector<int64_t> EveryRow(int step) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 16; ++i) ids.push_back((i * 5 + step) % kVocab);
  return ids;
}

// A model with its optimizer, trained one step at a time by one runner.
class Trainer {
 public:
  Trainer(const Config& config, Runner runner) {
    Builder b(&main_, &startup_, kSeed);
    Var loss = BuildModel(b, config.dtype, config.sparse);
    std::unique_ptr<Optimizer> opt;
    switch (config.opt) {
      case Opt::kSgd: opt = std::make_unique<SGD>(kLearningRate); break;
      case Opt::kMomentum: opt = std::make_unique<Momentum>(kLearningRate / 5, 0.9f); break;
      case Opt::kAdam: opt = std::make_unique<Adam>(kLearningRate / 20); break;
    }
    if (config.l2 > 0) opt->set_l2(static_cast<float>(config.l2));
    if (config.clip > 0) opt->set_clip_global_norm(static_cast<float>(config.clip));
    for (const ParamGrad& pair : opt->Minimize(b, loss)) params_.push_back(pair.param);
    Executor().Run(startup_.desc(), &scope_);
    if (runner == Runner::kExecutor) {
      step_ = executor_.Prepare(main_.desc(), &scope_);
      return;
    }
    ExecutionStrategy strategy;
    strategy.num_threads = 2;
    BuildStrategy build;
    build.reduce =
        runner == Runner::kTwoPlacesReduce ? ReduceStrategy::kReduce : ReduceStrategy::kAllReduce;
    const int places = runner == Runner::kOnePlace ? 1 : 2;
    parallel_ = std::make_unique<ParallelExecutor>(
        main_.desc(), &scope_,
        ParallelExecutor::Options{.places = std::vector<Place>(places, Place::Cpu()),
                                  .strategy = strategy,
                                  .build = build});
  }

  void Step(const FeedList& feeds) {
    if (parallel_) {
      parallel_->Run(feeds);
    } else {
      executor_.Run(*step_, feeds);
    }
  }

  // The parameters (place 0's copy), by name.
  std::map<std::string, Tensor> Params() const {
    std::map<std::string, Tensor> out;
    for (const auto& name : params_) out[name] = scope_.GetTensor(name).Clone();
    return out;
  }

 private:
  Program main_, startup_;
  Scope scope_;
  std::vector<std::string> params_;
  Executor executor_;
  std::unique_ptr<PreparedBlock> step_;
  std::unique_ptr<ParallelExecutor> parallel_;
};

// The dense model's gradients at given parameters (backward only, no optimizer).
class Gradients {
 public:
  explicit Gradients(DataType dtype) {
    Builder b(&main_, &startup_, kSeed);
    Var loss = BuildModel(b, dtype, /*sparse=*/false);
    pairs_ = AppendBackward(&main_, loss.name);
    Executor().Run(startup_.desc(), &scope_);
  }

  std::map<std::string, Tensor> At(const std::map<std::string, Tensor>& params,
                                   const FeedList& feeds) {
    std::vector<std::string> fetches;
    for (const auto& pair : pairs_) {
      scope_.Var(pair.param)->mutable_tensor()->CopyFrom(params.at(pair.param));
      fetches.push_back(pair.grad);
    }
    const auto got = Executor().Run(main_.desc(), &scope_, feeds, fetches);
    std::map<std::string, Tensor> out;
    for (size_t i = 0; i < pairs_.size(); ++i) out[pairs_[i].param] = got[i].Clone();
    return out;
  }

 private:
  Program main_, startup_;
  Scope scope_;
  std::vector<ParamGrad> pairs_;
};

using Values = std::map<std::string, std::vector<double>>;

Values ToValues(const std::map<std::string, Tensor>& tensors) {
  Values out;
  for (const auto& [name, t] : tensors) {
    std::vector<double>& v = out[name];
    for (int64_t k = 0; k < t.numel(); ++k) v.push_back(t.GetAsDouble(k));
  }
  return out;
}

// One SGD step by hand, in double: g' = g + l2 * p (on the rows a sparse
// gradient holds: `touched`), clip factor c / max(c, ||g'||) over all g'.
// Returns the global norm of g'.
double ReferenceSgdStep(const Config& config, const std::set<int64_t>& touched, const Values& grads,
                        Values* params) {
  Values g = grads;
  for (auto& [name, values] : g) {
    const std::vector<double>& p = params->at(name);
    for (size_t k = 0; k < values.size(); ++k) {
      const bool decays =
          !(config.sparse && name == kTable) || touched.count(static_cast<int64_t>(k) / kDim) > 0;
      if (decays) values[k] += config.l2 * p[k];
    }
  }
  double squares = 0;
  for (const auto& [name, values] : g) {
    for (double v : values) squares += v * v;
  }
  const double norm = std::sqrt(squares);
  const double clip = config.clip;
  const double factor = clip > 0 ? clip / std::max(clip, norm) : 1.0;
  for (auto& [name, values] : *params) {
    for (size_t k = 0; k < values.size(); ++k) {
      values[k] -= static_cast<double>(kLearningRate) * factor * g.at(name)[k];
    }
  }
  return norm;
}

// max over parameters of ||got - want|| / ||want - before||: the error of the step's update.
double UpdateError(const Values& before, const Values& want, const Values& got) {
  double worst = 0;
  for (const auto& [name, w] : want) {
    double diff = 0, update = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      diff += (got.at(name)[k] - w[k]) * (got.at(name)[k] - w[k]);
      update += (w[k] - before.at(name)[k]) * (w[k] - before.at(name)[k]);
    }
    worst = std::max(worst, std::sqrt(diff / std::max(update, 1e-300)));
  }
  return worst;
}

// Measured: at most 6e-15 (float64) and 1.5e-5 (float32: a step moves a
// parameter by a few percent, so the rounding of the parameter itself, 6e-8
// of it, is that much of the step).
double Tolerance(DataType dtype) { return dtype == DataType::kFloat64 ? 1e-12 : 1e-4; }

// (dtype, sparse, runner)
class RegularizationTest : public ::testing::TestWithParam<std::tuple<DataType, bool, Runner>> {};

TEST_P(RegularizationTest, SgdStepsMatchAReferenceByHand) {
  const auto [dtype, sparse, runner] = GetParam();
  struct Mode {
    const char* name;
    double l2, clip;
  };
  // The clip of 0.05 is below every step's norm here (asserted): it clips.
  for (const Mode& mode : {Mode{"l2", 0.1, 0}, Mode{"clip", 0, 0.05}, Mode{"both", 0.1, 0.05},
                           Mode{"clip above the norm", 0.1, 1e4}}) {
    SCOPED_TRACE(mode.name);
    Config config{dtype, sparse, mode.l2, mode.clip, Opt::kSgd};
    Trainer trainer(config, runner);
    Gradients gradients(dtype);
    for (int step = 0; step < 4; ++step) {
      SCOPED_TRACE(StrCat("step ", step));
      const std::vector<int64_t> ids = SomeRows(step);
      const FeedList feeds = Feeds(ids, step);
      const auto params = trainer.Params();
      const Values before = ToValues(params);
      Values want = before;
      const double norm = ReferenceSgdStep(config, std::set<int64_t>(ids.begin(), ids.end()),
                                           ToValues(gradients.At(params, feeds)), &want);
      if (mode.clip > 0 && mode.clip < 1) {
        ASSERT_GT(norm, 2 * mode.clip) << "the clip is idle";
      }
      trainer.Step(feeds);
      const Values got = ToValues(trainer.Params());
      EXPECT_LE(UpdateError(before, want, got), Tolerance(dtype));
      if (!sparse) continue;
      // Rows not looked up keep their bits in the sparse model.
      for (int64_t row = 0; row < kVocab; ++row) {
        if (std::find(ids.begin(), ids.end(), row) != ids.end()) continue;
        for (int64_t j = 0; j < kDim; ++j) {
          ASSERT_EQ(got.at(kTable)[row * kDim + j], before.at(kTable)[row * kDim + j])
              << "row " << row;
        }
      }
    }
  }
}

// ||a - b|| / ||a|| per parameter, over `rows` of the table (all rows when empty).
double RelativeDifference(const Values& a, const Values& b, const std::set<int64_t>& rows = {}) {
  double worst = 0;
  for (const auto& [name, va] : a) {
    double diff = 0, norm = 0;
    for (size_t k = 0; k < va.size(); ++k) {
      if (name == kTable && !rows.empty() && !rows.count(static_cast<int64_t>(k) / kDim)) continue;
      diff += (va[k] - b.at(name)[k]) * (va[k] - b.at(name)[k]);
      norm += va[k] * va[k];
    }
    worst = std::max(worst, std::sqrt(diff / std::max(norm, 1e-300)));
  }
  return worst;
}

Values TrainValues(Config config, Runner runner, int steps,
                   const std::function<std::vector<int64_t>(int)>& rows) {
  Trainer trainer(config, runner);
  for (int s = 0; s < steps; ++s) trainer.Step(Feeds(rows(s), s));
  return ToValues(trainer.Params());
}

// (dtype, runner): the sparse model against the same model with is_sparse=false.
class SparseRegularizationTest : public ::testing::TestWithParam<std::tuple<DataType, Runner>> {};

TEST_P(SparseRegularizationTest, TrainsLikeDenseWhenEveryRowIsTouched) {
  const auto [dtype, runner] = GetParam();
  for (Opt opt : {Opt::kSgd, Opt::kMomentum, Opt::kAdam}) {
    SCOPED_TRACE(static_cast<int>(opt));
    Config config{dtype, false, 0.05, 0.5, opt};
    const Values dense = TrainValues(config, runner, 10, EveryRow);
    config.sparse = true;
    const Values got = TrainValues(config, runner, 10, EveryRow);
    EXPECT_LE(RelativeDifference(dense, got), Tolerance(dtype));
  }
}

TEST_P(SparseRegularizationTest, ClipsLikeDense) {
  const auto [dtype, runner] = GetParam();
  Config config{dtype, false, 0, 0.05, Opt::kSgd};
  const Values dense = TrainValues(config, runner, 10, SomeRows);
  config.sparse = true;
  const Values got = TrainValues(config, runner, 10, SomeRows);
  EXPECT_LE(RelativeDifference(dense, got), Tolerance(dtype));
}

TEST_P(SparseRegularizationTest, DecaysOnlyTheTouchedRows) {
  const auto [dtype, runner] = GetParam();
  Config config{dtype, false, 0.1, 0, Opt::kSgd};
  const Values initial = TrainValues(config, runner, 0, SomeRows);
  const Values dense = TrainValues(config, runner, 1, SomeRows);
  config.sparse = true;
  const Values got = TrainValues(config, runner, 1, SomeRows);
  const std::vector<int64_t> ids = SomeRows(0);
  const std::set<int64_t> touched(ids.begin(), ids.end());
  EXPECT_LE(RelativeDifference(dense, got, touched), Tolerance(dtype));
  const double kept =
      1 - static_cast<double>(kLearningRate) * config.l2;  // dense: p -= lr * l2 * p
  for (int64_t row = 0; row < kVocab; ++row) {
    if (touched.count(row)) continue;
    for (int64_t j = 0; j < kDim; ++j) {
      const size_t k = static_cast<size_t>(row * kDim + j);
      EXPECT_EQ(got.at(kTable)[k], initial.at(kTable)[k]) << "row " << row;
      EXPECT_NEAR(dense.at(kTable)[k], kept * initial.at(kTable)[k],
                  Tolerance(dtype) * std::abs(initial.at(kTable)[k]))
          << "row " << row;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, RegularizationTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat64), ::testing::Bool(),
                       ::testing::Values(Runner::kExecutor, Runner::kOnePlace,
                                         Runner::kTwoPlacesAllReduce, Runner::kTwoPlacesReduce)),
    [](const auto& info) {
      return StrCat(DataTypeName(std::get<0>(info.param)),
                    std::get<1>(info.param) ? "Sparse" : "Dense",
                    RunnerName(std::get<2>(info.param)));
    });

INSTANTIATE_TEST_SUITE_P(
    All, SparseRegularizationTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat64),
                       ::testing::Values(Runner::kExecutor, Runner::kOnePlace,
                                         Runner::kTwoPlacesAllReduce, Runner::kTwoPlacesReduce)),
    [](const auto& info) {
      return StrCat(DataTypeName(std::get<0>(info.param)), RunnerName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace rill
