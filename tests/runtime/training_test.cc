// Training end to end on the reference executor: a few hundred Adam steps on
// Fashion-MNIST make the loss fall, and a checkpoint taken mid-training
// resumes to bit-identical parameters.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "rill/builder.h"
#include "rill/checkpoint.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "tools/datasets/fashion_mnist.h"

namespace rill {
namespace {

struct Mlp {
  Program main, startup;
  Var loss;
  Var accuracy;
  Program eval;
};

void BuildMlp(Mlp* m, uint64_t seed) {
  Builder b(&m->main, &m->startup, seed);
  Var image = b.Data("image", {-1, 784});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(b.Fc(image, 64, Activation::kRelu), 32, Activation::kRelu);
  Var logits = b.Fc(h, 10);
  m->loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  m->accuracy = b.Accuracy(b.Softmax(logits), label);
  m->eval = m->main.CloneForTest();
  Adam(2e-3f).Minimize(b, m->loss);
}

FeedList Batch(const ImageDataset& d, int64_t first, int64_t n) {
  return {{"image", d.images.Slice(first, first + n)}, {"label", d.labels.Slice(first, first + n)}};
}

class TrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz")) {
      GTEST_SKIP()
          << "Fashion-MNIST not installed (bash tools/setup.sh installs dataset-fashion-mnist)";
    }
    train_ = LoadFashionMnist(kFashionMnistDir, true);
    test_ = LoadFashionMnist(kFashionMnistDir, false);
  }
  ImageDataset train_, test_;
};

TEST_F(TrainingTest, ThreeHundredAdamStepsMakeTheLossFall) {
  Mlp m;
  BuildMlp(&m, 0);
  Executor exe;
  Scope scope;
  exe.Run(m.startup.desc(), &scope);
  auto step = exe.Prepare(m.main.desc(), &scope);
  auto eval = exe.Prepare(m.eval.desc(), &scope);
  const double before = exe.Run(*eval, Batch(test_, 0, 1000), {m.loss.name})[0].GetAsDouble(0);
  double first = 0, last = 0;
  for (int s = 0; s < 300; ++s) {
    double loss = exe.Run(*step, Batch(train_, s * 64, 64), {m.loss.name})[0].GetAsDouble(0);
    if (s < 20) first += loss / 20;
    if (s >= 280) last += loss / 20;
  }
  auto out = exe.Run(*eval, Batch(test_, 0, 1000), {m.loss.name, m.accuracy.name});
  EXPECT_GT(before, 2.0);  // about log(10) at initialisation
  EXPECT_LT(last, 0.6 * first);
  EXPECT_LT(out[0].GetAsDouble(0), 0.8);
  EXPECT_GT(out[1].GetAsDouble(0), 0.72);
}

TEST_F(TrainingTest, ResumingFromACheckpointIsBitIdentical) {
  const std::string path = ::testing::TempDir() + "/rill_training_checkpoint.pb";
  auto train_steps = [&](Mlp& m, Scope& scope, int from, int to) {
    Executor exe;
    auto step = exe.Prepare(m.main.desc(), &scope);
    for (int s = from; s < to; ++s) exe.Run(*step, Batch(train_, s * 32, 32));
  };
  // Uninterrupted: 40 steps.
  Mlp a;
  BuildMlp(&a, 5);
  Scope scope_a;
  Executor().Run(a.startup.desc(), &scope_a);
  train_steps(a, scope_a, 0, 40);
  // Interrupted: 20 steps, save, then a fresh process-like start: new programs, new scope, load, 20
  // more.
  {
    Mlp b;
    BuildMlp(&b, 5);
    Scope scope_b;
    Executor().Run(b.startup.desc(), &scope_b);
    train_steps(b, scope_b, 0, 20);
    SaveCheckpoint(b.main.desc(), scope_b, path);
  }
  Mlp c;
  BuildMlp(&c, 99);  // a different seed: everything must come from the checkpoint
  Scope scope_c;
  Executor().Run(c.startup.desc(), &scope_c);
  LoadCheckpoint(c.main.desc(), &scope_c, path);
  train_steps(c, scope_c, 20, 40);
  int compared = 0;
  for (const auto& var : a.main.desc().blocks(0).vars()) {
    if (!var.persistable()) continue;
    const Tensor& x = scope_a.GetTensor(var.name());
    const Tensor& y = scope_c.GetTensor(var.name());
    ASSERT_EQ(x.shape(), y.shape()) << var.name();
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.bytes()), 0) << var.name() << " differs";
    ++compared;
  }
  EXPECT_GE(compared,
            6 + 12 + 1);  // 6 parameters, their Adam moments and powers, the learning rate
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace rill
