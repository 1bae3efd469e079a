// The CSP ops of a program — channels, go, while, select — on the actor
// executor (fibers) and the reference executor (threads): right results,
// errors of go blocks reported from the run, deadlocks ended by the watchdog.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/parallel_executor.h"
#include "rill/program_io.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;

enum class Exec { kReference, kActor };

std::vector<Tensor> RunOnce(Exec exec, const proto::ProgramDesc& program,
                            const std::vector<std::string>& fetches,
                            std::chrono::milliseconds watchdog = std::chrono::milliseconds(0)) {
  Scope scope;
  if (exec == Exec::kReference) return Executor().Run(program, &scope, {}, fetches);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  if (watchdog.count() > 0) strategy.watchdog_timeout = watchdog;
  strategy.on_watchdog_report = [](const std::string&) {};
  ParallelExecutor exe(program, &scope, {.strategy = strategy});
  return exe.Run({}, fetches);
}

// A producer go block sends `values` tensors (1, 2, ... times ones[4]) and
// closes; the consumer sums until the channel is closed into "sum". With
// `bad_shape` the producer's third send has the wrong shape.
Program SumProgram(int values, int capacity, bool bad_shape = false) {
  Program main, startup;
  Builder b(&main, &startup);
  Var ch = b.MakeChannel({4}, DataType::kFloat32, capacity);
  Var count = b.Constant({1}, static_cast<float>(values));
  b.Go([&](Builder& b) {
    Var i = b.Constant({1}, 0);
    Var ones = b.Constant({4}, 1);
    Var more = b.LessThan(i, count);
    b.While(more, [&](Builder& b) {
      b.Assign(b.Scale(i, 1, 1), i);
      b.ChannelSend(ch, b.Mul(ones, i));
      b.Assign(b.LessThan(i, count), more);
    });
    if (bad_shape) b.ChannelSend(ch, b.Constant({3}, 7));
    b.ChannelClose(ch);
  });
  Var sum = b.Variable("sum", {4});
  b.Assign(b.Constant({4}, 0), sum);
  auto [x, ok] = b.ChannelRecv(ch);
  b.While(ok, [&](Builder& b) {
    b.Assign(b.Add(sum, x), sum);
    b.ChannelRecvInto(ch, x, ok);
  });
  return main;
}

class CspOpsTest : public ::testing::TestWithParam<Exec> {};

TEST_P(CspOpsTest, ConsumerLoopSumsWhatTheGoBlockSends) {
  for (int capacity : {0, 1, 64}) {
    const auto out = RunOnce(GetParam(), SumProgram(200, capacity).desc(), {"sum"});
    ASSERT_EQ(out[0].numel(), 4);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(out[0].data<float>()[k], 20100.0f) << capacity;
  }
}

TEST_P(CspOpsTest, FailingGoBlockFailsTheRunInsteadOfHanging) {
  const auto start = Clock::now();
  try {
    RunOnce(GetParam(), SumProgram(5, 0, /*bad_shape=*/true).desc(), {"sum"});
    FAIL() << "the run should have failed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(go)"), std::string::npos) << what;
    EXPECT_NE(what.find("sending float32[3]"), std::string::npos) << what;
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

TEST_P(CspOpsTest, GoBlockSharesTheParentScopeByName) {
  Program main, startup;
  Builder b(&main, &startup);
  Var done = b.MakeChannel({1}, DataType::kFloat32, 0);
  Var shared = b.Variable("shared", {2});
  b.Go([&](Builder& b) {
    b.Assign(b.Constant({2}, 42), shared);
    b.ChannelSend(done, b.Constant({1}, 1));
  });
  b.ChannelRecv(done);  // the go block has written `shared`
  Var result = b.Variable("result", {2});
  b.Assign(b.Scale(shared, 2), result);
  const auto out = RunOnce(GetParam(), main.desc(), {"result"});
  EXPECT_EQ(out[0].data<float>()[0], 84.0f);
  EXPECT_EQ(out[0].data<float>()[1], 84.0f);
}

TEST_P(CspOpsTest, SendOnAClosedChannelIsAnErrorNamingIt) {
  Program main, startup;
  Builder b(&main, &startup);
  Var ch = b.MakeChannel({1}, DataType::kFloat32, 4);
  b.ChannelClose(ch);
  b.ChannelSend(ch, b.Constant({1}, 1));
  try {
    RunOnce(GetParam(), main.desc(), {});
    FAIL() << "send on a closed channel should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("which is closed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(ch.name), std::string::npos) << e.what();
  }
}

// select: a ready receive wins over default; with nothing ready, default runs;
// a send case delivers into a buffered channel. Saved and reloaded first.
TEST_P(CspOpsTest, SelectRunsTheCaseThatCanGoOn) {
  Program main, startup;
  Builder b(&main, &startup);
  Var full = b.MakeChannel({1}, DataType::kFloat32, 1);
  Var empty = b.MakeChannel({1}, DataType::kFloat32, 1);
  Var sink = b.MakeChannel({1}, DataType::kFloat32, 1);
  b.ChannelSend(full, b.Constant({1}, 5));
  Var first = b.Variable("first", {1});
  Var second = b.Variable("second", {1});
  b.Select(
      {Builder::SelectCase::Recv(full,
                                 [&](Builder& b, const Var& v, const Var&) { b.Assign(v, first); }),
       Builder::SelectCase::Default([&](Builder& b) { b.Assign(b.Constant({1}, -1), first); })});
  b.Select(
      {Builder::SelectCase::Recv(
           empty, [&](Builder& b, const Var& v, const Var&) { b.Assign(v, second); }),
       Builder::SelectCase::Default([&](Builder& b) { b.Assign(b.Constant({1}, -1), second); })});
  b.Select({Builder::SelectCase::Send(sink, b.Constant({1}, 9), {})});
  auto [sent, ok] = b.ChannelRecv(sink);
  Var third = b.Variable("third", {1});
  b.Assign(sent, third);

  const std::string path = ::testing::TempDir() + "/select_program.pbtxt";
  SaveProgram(main.desc(), path);
  const proto::ProgramDesc loaded = LoadProgram(path);
  std::remove(path.c_str());
  const auto out = RunOnce(GetParam(), loaded, {"first", "second", "third"});
  EXPECT_EQ(out[0].data<float>()[0], 5.0f);
  EXPECT_EQ(out[1].data<float>()[0], -1.0f);
  EXPECT_EQ(out[2].data<float>()[0], 9.0f);
}

// Go blocks nested five deep, each declaring a variable of its own: every go
// block's thread (or fiber) binds its block against the scope of the go block
// that started it, which may have finished by then. The run must end with the
// innermost block's value, on both executors, instead of hanging.
Program NestedGoProgram(int depth) {
  Program main, startup;
  Builder b(&main, &startup);
  Var done = b.MakeChannel({1}, DataType::kFloat32, 0);
  Var result = b.Variable("result", {1});
  std::function<void(Builder&, int)> level = [&](Builder& b, int d) {
    Var local = b.Variable(StrCat("local_", d), {1});
    b.Assign(b.Constant({1}, static_cast<float>(d)), local);
    if (d == depth) {
      b.Assign(local, result);
      b.ChannelSend(done, b.Constant({1}, 1));
      return;
    }
    b.Go([&](Builder& b) { level(b, d + 1); });
  };
  b.Go([&](Builder& b) { level(b, 1); });
  b.ChannelRecv(done);
  return main;
}

TEST_P(CspOpsTest, ChainOfFiveNestedGoBlocksFinishes) {
  for (int i = 0; i < 20; ++i) {
    const auto out = RunOnce(GetParam(), NestedGoProgram(5).desc(), {"result"});
    ASSERT_EQ(out[0].numel(), 1);
    EXPECT_EQ(out[0].data<float>()[0], 5.0f);
  }
}

// A go block started in a loop body reads the body's local after the loop
// has ended: the loop's scope must live as long as the go block.
TEST_P(CspOpsTest, GoBlockStartedInALoopOutlivesTheLoop) {
  Program main, startup;
  Builder b(&main, &startup);
  Var start = b.MakeChannel({1}, DataType::kFloat32, 0);
  Var done = b.MakeChannel({1}, DataType::kFloat32, 0);
  Var result = b.Variable("result", {1});
  Var again = b.Variable("again", {1});
  b.Assign(b.Constant({1}, 1), again);
  b.While(again, [&](Builder& b) {
    Var inner = b.Variable("inner", {1});
    b.Assign(b.Constant({1}, 7), inner);
    b.Go([&](Builder& b) {
      b.ChannelRecv(start);  // after the loop has ended
      b.Assign(b.Scale(inner, 2), result);
      b.ChannelSend(done, b.Constant({1}, 1));
    });
    b.Assign(b.Constant({1}, 0), again);
  });
  b.ChannelSend(start, b.Constant({1}, 1));
  b.ChannelRecv(done);
  for (int i = 0; i < 20; ++i) {
    const auto out = RunOnce(GetParam(), main.desc(), {"result"});
    EXPECT_EQ(out[0].data<float>()[0], 14.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Executors, CspOpsTest, ::testing::Values(Exec::kReference, Exec::kActor),
                         [](const auto& info) {
                           return info.param == Exec::kReference ? "Reference" : "Actor";
                         });

// A receive nobody will ever satisfy: the watchdog ends the iteration (the
// channels are closed, the parked fiber returns) instead of a hang.
TEST(CspActorTest, DeadlockIsEndedByTheWatchdog) {
  Program main, startup;
  Builder b(&main, &startup);
  Var ch = b.MakeChannel({1}, DataType::kFloat32, 0);
  auto [x, ok] = b.ChannelRecv(ch);
  Var out = b.Variable("out", {1});
  b.Assign(x, out);
  const auto start = Clock::now();
  try {
    RunOnce(Exec::kActor, main.desc(), {"out"}, std::chrono::milliseconds(300));
    FAIL() << "a deadlocked run should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("watchdog"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

// Shutting the executor down while a go block and a receive are parked ends
// them: the destructor returns and the iteration's future holds an error.
TEST(CspActorTest, ShutdownReleasesParkedFibers) {
  Program main, startup;
  Builder b(&main, &startup);
  Var ch = b.MakeChannel({1}, DataType::kFloat32, 0);
  Var never = b.MakeChannel({1}, DataType::kFloat32, 0);
  b.Go([&](Builder& b) { b.ChannelRecv(never); });
  b.ChannelRecv(ch);
  Scope scope;
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  strategy.watchdog_timeout = std::chrono::milliseconds(0);
  std::future<std::vector<Tensor>> future;
  const auto start = Clock::now();
  {
    ParallelExecutor exe(main.desc(), &scope, {.strategy = strategy});
    future = exe.RunAsync({}, {});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  try {
    future.get();
    ADD_FAILURE() << "a run parked on a channel nobody sends to finished";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// The same program runs many iterations on one executor (fresh channels each time).
TEST(CspActorTest, RepeatedIterationsReuseTheGraph) {
  Scope scope;
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  const Program program = SumProgram(20, 2);
  ParallelExecutor exe(program.desc(), &scope, {.strategy = strategy});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(exe.Run({}, {"sum"})[0].data<float>()[0], 210.0f);
}

}  // namespace
}  // namespace rill
