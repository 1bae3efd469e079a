// Fashion-MNIST with a 784-256-128-10 MLP, Adam, on the actor executor.
// Settings from the environment: EPOCHS (default 5), BATCH (64), LR (1e-3),
// SEED (0), THREADS (1).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tools/datasets/fashion_mnist.h"

using namespace rill;

static double Env(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : fallback;
}

// Rows order[begin, end) of a dataset as feeds.
static FeedList Batch(const ImageDataset& d, const std::vector<int64_t>& order, size_t begin,
                      size_t end) {
  const int64_t n = static_cast<int64_t>(end - begin);
  Tensor x(DataType::kFloat32, {n, 784}), y(DataType::kInt64, {n, 1});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = order[begin + static_cast<size_t>(i)];
    std::copy_n(d.images.data<float>() + row * 784, 784, x.mutable_data<float>() + i * 784);
    y.mutable_data<int64_t>()[i] = d.labels.data<int64_t>()[row];
  }
  return {{"image", x}, {"label", y}};
}

int main() {
  const int epochs = static_cast<int>(Env("EPOCHS", 5));
  const size_t batch = static_cast<size_t>(Env("BATCH", 64));
  const auto seed = static_cast<uint64_t>(Env("SEED", 0));
  ImageDataset train = LoadFashionMnist(kFashionMnistDir, true);
  ImageDataset test = LoadFashionMnist(kFashionMnistDir, false);

  Program main, startup;
  Builder b(&main, &startup, seed);
  Var image = b.Data("image", {-1, 784});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(b.Fc(image, 256, Activation::kRelu), 128, Activation::kRelu);
  Var logits = b.Fc(h, 10);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  Var accuracy = b.Accuracy(b.Softmax(logits), label);
  Program eval = main.CloneForTest();                           // forward only
  Adam(static_cast<float>(Env("LR", 1e-3))).Minimize(b, loss);  // + backward and updates

  Scope scope;
  Executor().Run(startup.desc(), &scope);  // initialise parameters, once
  ExecutionStrategy strategy;
  strategy.num_threads = static_cast<int>(Env("THREADS", 1));
  ParallelExecutor step(main.desc(), &scope, {.strategy = strategy});  // spawned once
  ParallelExecutor evaluate(eval.desc(), &scope, {.strategy = strategy});

  std::vector<int64_t> order(static_cast<size_t>(train.size())),
      all(static_cast<size_t>(test.size()));
  std::iota(all.begin(), all.end(), 0);
  std::mt19937_64 shuffle(seed);
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), shuffle);
    double sum = 0;
    size_t steps = 0;
    for (size_t i = 0; i < order.size(); i += batch, ++steps) {
      sum += step.Run(Batch(train, order, i, std::min(order.size(), i + batch)), {loss.name})[0]
                 .GetAsDouble(0);
    }
    double correct = 0;
    for (size_t i = 0; i < all.size(); i += 1000) {
      const size_t end = std::min(all.size(), i + 1000);
      correct += evaluate.Run(Batch(test, all, i, end), {accuracy.name})[0].GetAsDouble(0) *
                 double(end - i);
    }
    std::printf("epoch %d: train loss %.4f, test accuracy %.4f\n", epoch, sum / double(steps),
                correct / double(all.size()));
  }
  return 0;
}
