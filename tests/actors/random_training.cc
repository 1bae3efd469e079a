#include "tests/actors/random_training.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "rill/builder.h"
#include "rill/error.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"

namespace rill::testing {
namespace {

int64_t Uniform(std::mt19937_64& gen, int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(gen);
}

Tensor RandomValues(const Shape& shape, DataType dtype, std::mt19937_64& gen) {
  Tensor t(dtype, shape);
  std::uniform_real_distribution<double> dist(-1, 1);
  VisitFloatType(dtype, [&]<class T>() {
    T* p = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(gen));
  });
  return t;
}

Tensor RandomIds(int64_t n, int64_t bound, std::mt19937_64& gen) {
  Tensor t(DataType::kInt64, {n, 1});
  for (int64_t i = 0; i < n; ++i) t.mutable_data<int64_t>()[i] = Uniform(gen, 0, bound - 1);
  return t;
}

Activation ActivationOf(int a) {
  return a == 0 ? Activation::kRelu : a == 1 ? Activation::kTanh : Activation::kSigmoid;
}

// Builds the model and its optimizer; returns the parameters' names.
std::vector<std::string> Build(const RandomTraining& t, Builder& b) {
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h;
  switch (t.kind) {
    case RandomTraining::Kind::kMlp: {
      h = b.Data("x", {-1, t.input}, t.dtype);
      for (int width : t.hidden) h = b.Fc(h, width, ActivationOf(t.activation));
      break;
    }
    case RandomTraining::Kind::kCnn: {
      Var x = b.Data("x", {-1, t.channels, t.image, t.image}, t.dtype);
      h = b.Pool2d(b.Conv2d(x, static_cast<int>(t.filters), 3, 1, 1, ActivationOf(t.activation)),
                   2);
      break;
    }
    case RandomTraining::Kind::kEmbedding: {
      Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
      h = b.Embedding(ids, t.vocab, t.width, t.dtype, t.sparse);
      for (int width : t.hidden) h = b.Fc(h, width, ActivationOf(t.activation));
      break;
    }
  }
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, t.classes), label));
  std::unique_ptr<Optimizer> opt;
  if (t.optimizer == 0) opt = std::make_unique<SGD>(t.learning_rate);
  if (t.optimizer == 1) opt = std::make_unique<Momentum>(t.learning_rate);
  if (t.optimizer == 2) opt = std::make_unique<Adam>(t.learning_rate);
  if (t.l2 > 0) opt->set_l2(t.l2);
  if (t.clip > 0) opt->set_clip_global_norm(t.clip);
  std::vector<std::string> params;
  for (const ParamGrad& pair : opt->Minimize(b, loss)) params.push_back(pair.param);
  return params;
}

}  // namespace

std::string RandomTraining::Describe() const {
  static const char* kKinds[] = {"mlp", "cnn", "embedding"};
  static const char* kOptimizers[] = {"sgd", "momentum", "adam"};
  std::string hidden_text;
  for (int w : hidden) hidden_text += StrCat(" ", w);
  return StrCat("seed ", seed, ": ", kKinds[static_cast<int>(kind)], " ", DataTypeName(dtype),
                " input ", input, " hidden", hidden_text, " act ", activation, " channels ",
                channels, " image ", image, " filters ", filters, " vocab ", vocab, " width ",
                width, sparse ? " sparse" : "", " classes ", classes, " ", kOptimizers[optimizer],
                " lr ", learning_rate, " l2 ", l2, " clip ", clip, " batch ", batch);
}

FeedList RandomTraining::Feeds(int step) const {
  std::mt19937_64 gen(seed * 1000003 + static_cast<uint64_t>(step));
  FeedList feeds;
  switch (kind) {
    case Kind::kMlp: feeds.push_back({"x", RandomValues({batch, input}, dtype, gen)}); break;
    case Kind::kCnn:
      feeds.push_back({"x", RandomValues({batch, channels, image, image}, dtype, gen)});
      break;
    case Kind::kEmbedding: feeds.push_back({"ids", RandomIds(batch, vocab, gen)}); break;
  }
  feeds.push_back({"label", RandomIds(batch, classes, gen)});
  return feeds;
}

RandomTraining MakeRandomTraining(uint64_t seed, DataType dtype) {
  std::mt19937_64 gen(seed);
  RandomTraining t;
  t.seed = seed;
  t.dtype = dtype;
  t.kind = static_cast<RandomTraining::Kind>(Uniform(gen, 0, 2));
  t.activation = static_cast<int>(Uniform(gen, 0, 2));
  t.classes = static_cast<int>(Uniform(gen, 2, 6));
  t.input = Uniform(gen, 3, 24);
  const int64_t layers = Uniform(gen, t.kind == RandomTraining::Kind::kMlp ? 1 : 0, 3);
  for (int64_t i = 0; i < layers; ++i) t.hidden.push_back(static_cast<int>(Uniform(gen, 2, 24)));
  t.channels = Uniform(gen, 1, 2);
  t.image = 2 * Uniform(gen, 2, 4);
  t.filters = Uniform(gen, 2, 4);
  t.vocab = Uniform(gen, 8, 40);
  t.width = Uniform(gen, 2, 10);
  t.sparse = Uniform(gen, 0, 1) == 1;
  t.optimizer = static_cast<int>(Uniform(gen, 0, 2));
  const double log_lr = std::uniform_real_distribution<double>(-3, -1)(gen);
  t.learning_rate = static_cast<float>(std::pow(10.0, log_lr));
  if (Uniform(gen, 0, 3) == 0) t.l2 = 1e-3f;
  if (Uniform(gen, 0, 3) == 0) t.clip = 0.5f;
  t.batch = Uniform(gen, 4, 40);
  return t;
}

RandomTrainingRun TrainRandom(const RandomTraining& t, int places, ReduceStrategy reduce,
                              const std::vector<int>& checkpoints) {
  Program main, startup;
  Builder b(&main, &startup, t.seed + 1);
  const std::vector<std::string> params = Build(t, b);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.blas_threads = 1;
  BuildStrategy build;
  build.reduce = reduce;
  ParallelExecutor exe(main.desc(), &scope,
                       {.places = std::vector<Place>(static_cast<size_t>(places), Place::Cpu()),
                        .strategy = strategy,
                        .build = build});
  RandomTrainingRun run;
  auto snapshot = [&] {
    std::vector<Tensor> values;
    for (const auto& name : params) values.push_back(scope.GetTensor(name).Clone());
    return values;
  };
  run.initial = snapshot();
  int step = 0;
  for (int checkpoint : checkpoints) {
    for (; step < checkpoint; ++step) exe.Run(t.Feeds(step));
    run.at.push_back(snapshot());
  }
  return run;
}

ParameterDifference Difference(const std::vector<Tensor>& initial, const std::vector<Tensor>& a,
                               const std::vector<Tensor>& b) {
  ParameterDifference worst;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = 0, norm = 0, moved = 0;
    for (int64_t k = 0; k < a[i].numel(); ++k) {
      const double va = a[i].GetAsDouble(k);
      const double d = b[i].GetAsDouble(k) - va;
      const double m = va - initial[i].GetAsDouble(k);
      diff += d * d;
      norm += va * va;
      moved += m * m;
    }
    worst.of_value = std::max(worst.of_value, std::sqrt(diff / std::max(norm, 1e-300)));
    worst.of_update = std::max(worst.of_update, std::sqrt(diff / std::max(moved, 1e-300)));
  }
  return worst;
}

}  // namespace rill::testing
