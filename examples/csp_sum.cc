// CSP example: a producer go block sends N tensors on a channel and closes it;
// the consumer loop receives until the channel is closed, summing what came.
//
//   csp_sum [N] [CAPACITY] [--save FILE]
//
// Runs the program on the actor executor (go blocks on fibers) and on the
// reference executor (go blocks on threads) and prints both sums; --save
// writes the program, to run with `rill run FILE --fetch sum`.
#include <cstdlib>
#include <iostream>
#include <string>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/parallel_executor.h"
#include "rill/program_io.h"

namespace {

// sum = 1 + 2 + ... + n, as a float32[4] of equal values.
rill::Program SumProgram(int n, int capacity) {
  using rill::Builder;
  using rill::DataType;
  using rill::Var;
  rill::Program main, startup;
  Builder b(&main, &startup);
  Var ch = b.MakeChannel({4}, DataType::kFloat32, capacity);
  Var count = b.Constant({1}, static_cast<float>(n));
  b.Go([&](Builder& b) {  // the producer
    Var i = b.Constant({1}, 0);
    Var ones = b.Constant({4}, 1);
    Var more = b.LessThan(i, count);
    b.While(more, [&](Builder& b) {
      b.Assign(b.Scale(i, 1, 1), i);
      b.ChannelSend(ch, b.Mul(ones, i));
      b.Assign(b.LessThan(i, count), more);
    });
    b.ChannelClose(ch);
  });
  Var sum = b.Variable("sum", {4});
  b.Assign(b.Constant({4}, 0), sum);
  auto [x, ok] = b.ChannelRecv(ch);  // the consumer
  b.While(ok, [&](Builder& b) {
    b.Assign(b.Add(sum, x), sum);
    b.ChannelRecvInto(ch, x, ok);
  });
  return main;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 100, capacity = 4;
  std::string save;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--save" && i + 1 < argc) {
      save = argv[++i];
    } else if (positional++ == 0) {
      n = std::atoi(argv[i]);
    } else {
      capacity = std::atoi(argv[i]);
    }
  }
  try {
    const rill::Program program = SumProgram(n, capacity);
    if (!save.empty()) rill::SaveProgram(program.desc(), save);
    rill::Scope actor_scope, reference_scope;
    rill::ExecutionStrategy strategy;
    strategy.num_threads = 2;
    rill::ParallelExecutor actors(program.desc(), &actor_scope, {.strategy = strategy});
    const float by_actors = actors.Run({}, {"sum"})[0].data<float>()[0];
    const float by_reference =
        rill::Executor().Run(program.desc(), &reference_scope, {}, {"sum"})[0].data<float>()[0];
    std::cout << "sum of 1.." << n << " over a channel of capacity " << capacity
              << ": actor executor " << by_actors << ", reference executor " << by_reference
              << ", expected " << n * (n + 1) / 2.0 << "\n";
    return by_actors == by_reference && by_actors == n * (n + 1) / 2.0f ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "csp_sum: " << e.what() << "\n";
    return 1;
  }
}
