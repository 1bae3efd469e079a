// Linear regression on synthetic data: y = x . [2, -3.4, 1.7] + 4.2 + noise.
// Trains one fc layer with SGD and checks that it recovers the weights.
#include <cmath>
#include <cstdio>
#include <random>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"

using namespace rill;

int main() {
  const float true_w[3] = {2.0f, -3.4f, 1.7f};
  const float true_b = 4.2f;

  // 1. The programs: y_hat = fc(x), loss = mean((y_hat - y)^2).
  Program main, startup;
  Builder b(&main, &startup, /*seed=*/1);
  Var x = b.Data("x", {-1, 3});
  Var y = b.Data("y", {-1, 1});
  Var y_hat = b.Fc(x, 1);
  Var loss = b.Mean(b.SquareErrorCost(y_hat, y));
  SGD(0.05f).Minimize(b, loss);  // appends the gradient ops and one sgd op per parameter

  // 2. Initialise parameters once, then bind the main program to the scope.
  Executor exe;
  Scope scope;
  exe.Run(startup.desc(), &scope);
  auto step = exe.Prepare(main.desc(), &scope);

  // 3. Train on fresh synthetic batches.
  std::mt19937 gen(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  float last_loss = 0;
  for (int i = 0; i < 500; ++i) {
    Tensor xs(DataType::kFloat32, {32, 3}), ys(DataType::kFloat32, {32, 1});
    for (int r = 0; r < 32; ++r) {
      float target = true_b + 0.01f * normal(gen);
      for (int c = 0; c < 3; ++c) {
        const float v = normal(gen);
        xs.mutable_data<float>()[r * 3 + c] = v;
        target += true_w[c] * v;
      }
      ys.mutable_data<float>()[r] = target;
    }
    last_loss =
        static_cast<float>(exe.Run(*step, {{"x", xs}, {"y", ys}}, {loss.name})[0].GetAsDouble(0));
  }

  // 4. The fc layer's parameters should now be the true ones.
  const Tensor& w = scope.GetTensor("fc_0.w");
  const Tensor& bias = scope.GetTensor("fc_0.b");
  bool ok = std::abs(bias.data<float>()[0] - true_b) < 0.05f;
  std::printf("loss %.5f\n", last_loss);
  for (int c = 0; c < 3; ++c) {
    std::printf("w[%d] = %.3f (true %.3f)\n", c, w.data<float>()[c], true_w[c]);
    ok = ok && std::abs(w.data<float>()[c] - true_w[c]) < 0.05f;
  }
  std::printf("b = %.3f (true %.3f)\n%s\n", bias.data<float>()[0], true_b,
              ok ? "recovered" : "NOT recovered");
  return ok ? 0 : 1;
}
