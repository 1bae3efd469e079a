// Loads the cube plugin, builds loss = mean(cube(x)), appends the backward
// pass, and checks d loss / d x against central finite differences.
// Usage: check_cube path/to/libcube_op.so
#include <rill/rill.h>

#include <cmath>
#include <cstdio>

using namespace rill;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s libcube_op.so\n", argv[0]);
    return 2;
  }
  try {
    LoadPlugin(argv[1]);
    Program main, startup;
    Builder b(&main, &startup);
    Var x = b.Parameter("x", {2, 3}, Initializer::Constant(0), DataType::kFloat64);
    Var y = b.AppendOp("cube", {{"X", {x}}}, {{"Out", 1}})[0];
    Var loss = b.Mean(y);
    AppendBackward(&main, loss.name);

    Tensor value(DataType::kFloat64, {2, 3});
    for (int i = 0; i < 6; ++i) value.mutable_data<double>()[i] = 0.3 * i - 0.8;
    Executor exe;
    // Runs the program with x = `at`; returns the loss and d loss / d x.
    auto run_at = [&](const Tensor& at) {
      Scope scope;
      scope.Var(x.name)->mutable_tensor()->CopyFrom(at);
      return exe.Run(main.desc(), &scope, {}, {loss.name, x.name + "@GRAD"});
    };
    auto loss_at = [&](const Tensor& at) { return run_at(at)[0].GetAsDouble(0); };
    const Tensor grad = run_at(value)[1];
    double worst = 0;
    for (int i = 0; i < 6; ++i) {
      Tensor up = value.Clone(), down = value.Clone();
      up.mutable_data<double>()[i] += 1e-5;
      down.mutable_data<double>()[i] -= 1e-5;
      const double numeric = (loss_at(up) - loss_at(down)) / 2e-5;
      worst = std::max(worst, std::abs(numeric - grad.data<double>()[i]));
    }
    std::printf("cube: largest gradient error %.2e (Rill %s)\n", worst, Version());
    if (worst > 1e-6) {
      std::printf("gradient check failed\n");
      return 1;
    }
    std::printf("gradient check passed\n");
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "check_cube: %s\n", e.what());
    return 1;
  }
}
