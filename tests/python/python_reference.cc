// python_reference: what the Python tests compare against, made with the C++
// API alone (no Python involved).
//
//   python_reference programs DIR
//     Builds each case below with rill::Builder (seed 3) and writes
//     DIR/<case>.main.pb and DIR/<case>.startup.pb.
//   python_reference train DIR STEPS sgd|sgd_cosine|adam|adamw [PLACES]
//     Builds the MLP of case "mlp" (seed 3) with the optimizer, runs the
//     startup program, then STEPS steps feeding DIR/x<i>.npy and DIR/y<i>.npy
//     (the reference Executor, or a ParallelExecutor on PLACES), and writes the
//     losses to DIR/losses.npy.
//   python_reference order EXAMPLES SEED EPOCH
//     Prints the example order of an epoch, one index a line, as `rill train`
//     documents it (rill/input_pipeline.h) and computes it for its preloaded
//     input (train_command.cc): 0..EXAMPLES-1 put through std::shuffle with
//     mt19937_64(SEED * 1000003 + EPOCH). Written here again, not taken from
//     InputPipeline, so that the Python datasets are checked against it.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "rill/rill.h"

namespace rill {
namespace {

constexpr uint64_t kSeed = 3;

// The MLP the training test runs: 6 -> 16 (relu) -> 3.
Var BuildMlp(Builder& b) {
  Var x = b.Data("x", {-1, 6});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(x, 16, Activation::kRelu);
  Var logits = b.Fc(h, 3);
  return b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
}

// Each case as tests/python/test_layers.py builds it with rill.layers.
const std::map<std::string, std::function<void(Builder&)>>& Cases() {
  static const std::map<std::string, std::function<void(Builder&)>> cases = {
      {"fc",
       [](Builder& b) {
         Var x = b.Data("x", {-1, 2, 3});
         b.Fc(x, 5);
         b.Fc(x, 4, Activation::kRelu, 2);
         b.Fc(x, 3, Activation::kSoftmax);
       }},
      {"activations",
       [](Builder& b) {
         Var x = b.Data("x", {-1, 6});
         b.Relu(x);
         b.Sigmoid(x);
         b.Tanh(x);
         b.Softmax(x);
       }},
      {"losses",
       [](Builder& b) {
         Var x = b.Data("x", {-1, 6});
         Var label = b.Data("label", {-1, 1}, DataType::kInt64);
         Var probabilities = b.Softmax(x);
         b.Mean(b.CrossEntropy(probabilities, label));
         b.Mean(b.SoftmaxWithCrossEntropy(x, label));
         b.Accuracy(probabilities, label);
         b.Accuracy(probabilities, label, 2);
       }},
      {"elementwise",
       [](Builder& b) {
         Var x = b.Data("x", {-1, 6});
         Var y = b.Data("y", {-1, 6});
         Var bias = b.Data("bias", {6}, DataType::kFloat32);
         b.Add(x, y);
         b.Sub(x, y);
         b.Mul(x, y);
         b.Div(x, y);
         b.Add(x, bias, 1);
         b.Mul(b.Add(x, y), y);  // what x + y, then * y, appends
       }},
      {"conv_pool",
       [](Builder& b) {
         Var image = b.Data("image", {-1, 2, 6, 6});
         Var c = b.Conv2d(image, 3, 3, 1, 1, Activation::kRelu);
         b.Pool2d(c, 2, "max", 2, 0);
         b.Pool2d(c, 3, "avg", 1, 1);
         b.Conv2d(image, 4, 3, 2, 0, Activation::kNone, 2);
       }},
      {"shapes",
       [](Builder& b) {
         Var x = b.Data("x", {-1, 6});
         b.Transpose(b.Reshape(x, {-1, 2, 3}), {0, 2, 1});
         b.Concat({x, x}, 1);
         b.Split(x, 3, 1);
         b.Scale(x, 2.5f, 0.5f);
         b.Dropout(x, 0.3f);
       }},
      {"norm",
       [](Builder& b) {
         Var image = b.Data("image", {-1, 2, 3, 3});
         b.BatchNorm(image, Activation::kRelu);
         b.BatchNorm(b.Data("x", {-1, 6}), Activation::kNone, 0.5f, 1e-3f);
         b.Gelu(b.LayerNorm(image, 2, 1e-4f));
       }},
      {"attention",
       [](Builder& b) {
         Var q = b.Data("q", {-1, 2, 3, 4});
         Var k = b.Data("k", {-1, 2, 3, 4});
         Var mask = b.Data("mask", {-1, 1, 1, 3});
         Var scores = b.MatMul(q, k, false, true, 0.5f);
         Var weights = b.MaskedSoftmax(scores, mask);
         b.MatMul(weights, k);
         b.Softmax(q, 1);
         b.MatMul(q, b.Data("w", {4, 5}, DataType::kFloat32));
       }},
      {"embedding",
       [](Builder& b) {
         Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
         b.Embedding(ids, 10, 4);
         b.Embedding(ids, 10, 4, DataType::kFloat64, true);
       }},
      {"mlp", [](Builder& b) { BuildMlp(b); }},
      {"backward", [](Builder& b) { AppendBackward(&b.main(), BuildMlp(b).name); }},
      {"mlp_sgd", [](Builder& b) { SGD(0.1f).Minimize(b, BuildMlp(b)); }},
      {"mlp_adam", [](Builder& b) { Adam(0.01f).Minimize(b, BuildMlp(b)); }},
      {"mlp_momentum_l2_clip",
       [](Builder& b) {
         Momentum(0.1f, 0.8f, true)
             .set_l2(1e-3f)
             .set_clip_global_norm(5.0f)
             .Minimize(b, BuildMlp(b));
       }},
  };
  return cases;
}

void WritePrograms(const std::string& dir) {
  for (const auto& [name, build] : Cases()) {
    Program main, startup;
    Builder b(&main, &startup, kSeed);
    build(b);
    SaveProgram(main.desc(), dir + "/" + name + ".main.pb");
    SaveProgram(startup.desc(), dir + "/" + name + ".startup.pb");
  }
}

void Train(const std::string& dir, int steps, const std::string& optimizer,
           const std::string& places) {
  Program main, startup;
  Builder b(&main, &startup, kSeed);
  Var loss = BuildMlp(b);
  if (optimizer == "sgd") {
    SGD(0.1f).Minimize(b, loss);
  } else if (optimizer == "sgd_cosine") {
    SGD sgd(0.1f);
    sgd.set_learning_rate_schedule(WarmupCosineDecay(2, 3, 0.1f));
    sgd.Minimize(b, loss);
  } else if (optimizer == "adamw") {
    AdamW(0.01f, 0.1f).Minimize(b, loss);
  } else {
    Adam(0.01f).Minimize(b, loss);
  }
  Scope scope;
  Executor executor;
  executor.Run(startup.desc(), &scope);
  std::unique_ptr<ParallelExecutor> parallel;
  if (!places.empty()) {
    parallel = std::make_unique<ParallelExecutor>(
        main.desc(), &scope, ParallelExecutorOptions{.places = ParsePlaces(places)});
  }
  Tensor losses(DataType::kFloat32, {steps});
  for (int i = 0; i < steps; ++i) {
    const FeedList feeds = {{"x", ReadNpy(StrCat(dir, "/x", i, ".npy"))},
                            {"label", ReadNpy(StrCat(dir, "/y", i, ".npy"))}};
    const std::vector<Tensor> out = parallel
                                        ? parallel->Run(feeds, {loss.name})
                                        : executor.Run(main.desc(), &scope, feeds, {loss.name});
    losses.mutable_data<float>()[i] = out.at(0).data<float>()[0];
  }
  WriteNpy(dir + "/losses.npy", losses);
}

void PrintOrder(int64_t examples, uint64_t seed, uint64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(examples));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffle(seed * 1000003 + epoch);
  std::shuffle(order.begin(), order.end(), shuffle);
  for (const int64_t index : order) std::cout << index << "\n";
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "programs") {
      rill::WritePrograms(args[1]);
      return 0;
    }
    if ((args.size() == 4 || args.size() == 5) && args[0] == "train" &&
        (args[3] == "sgd" || args[3] == "sgd_cosine" || args[3] == "adam" || args[3] == "adamw")) {
      rill::Train(args[1], std::stoi(args[2]), args[3], args.size() == 5 ? args[4] : "");
      return 0;
    }
    if (args.size() == 4 && args[0] == "order") {
      rill::PrintOrder(std::stoll(args[1]), std::stoull(args[2]), std::stoull(args[3]));
      return 0;
    }
  } catch (const std::exception& error) {
    std::cerr << "python_reference: " << error.what() << "\n";
    return 1;
  }
  std::cerr << "usage: python_reference programs DIR | train DIR STEPS "
               "sgd|sgd_cosine|adam|adamw [PLACES] | order EXAMPLES SEED EPOCH\n";
  return 2;
}
