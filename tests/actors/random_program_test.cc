// Property test: hundreds of random programs (random DAGs, in-place rewrites,
// several fetches) give bit-identical fetches on the actor executor and the
// reference executor, at 1, 2 and 4 threads.
#include "tests/actors/random_program.h"

#include <gtest/gtest.h>

#include <cstring>

#include "rill/executor.h"
#include "rill/parallel_executor.h"
#include "rill/program_io.h"
#include "tests/testing/training.h"

namespace rill::testing {
namespace {

void InitState(const RandomProgram& p, Scope* scope) {
  for (const auto& [name, value] : p.state) scope->Var(name)->mutable_tensor()->CopyFrom(value);
}

constexpr int kPrograms = 200;

// (threads, ops spread round robin over the streams instead of by cost)
class RandomProgramTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(RandomProgramTest, ActorExecutorMatchesReferenceBitForBit) {
  const auto [threads, round_robin] = GetParam();
  auto runtime = std::make_shared<Runtime>(threads);
  ExecutionStrategy strategy;
  strategy.num_threads = threads;
  if (round_robin) strategy.stream_assignment = StreamAssignment::kRoundRobin;
  strategy.blas_threads = 1;
  strategy.release_min_bytes = 0;  // free every intermediate early: exercise the keep rules
  for (int seed = 0; seed < kPrograms; ++seed) {
    const RandomProgram p = MakeRandomProgram(static_cast<uint64_t>(seed));
    SCOPED_TRACE(StrCat("seed ", seed, "\n", ProgramToText(p.program)));
    Scope ref_scope, actor_scope;
    InitState(p, &ref_scope);
    InitState(p, &actor_scope);
    Executor reference;
    auto prepared = reference.Prepare(p.program, &ref_scope);
    ParallelExecutor actors(p.program, &actor_scope, {.strategy = strategy, .runtime = runtime});
    for (size_t it = 0; it < p.feeds.size(); ++it) {
      const auto want = reference.Run(*prepared, p.feeds[it], p.fetches);
      const auto got = actors.Run(p.feeds[it], p.fetches);
      ASSERT_EQ(got.size(), want.size());
      for (size_t f = 0; f < want.size(); ++f) {
        ASSERT_TRUE(BitEqual(want[f], got[f]))
            << "iteration " << it << ", fetch " << p.fetches[f] << ": reference "
            << want[f].Describe() << " first " << want[f].GetAsDouble(0) << ", actor "
            << got[f].Describe() << " first " << got[f].GetAsDouble(0);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, RandomProgramTest,
                         ::testing::Combine(::testing::Values(1, 2, 4), ::testing::Bool()),
                         [](const auto& info) {
                           return StrCat(std::get<0>(info.param), "Threads",
                                         std::get<1>(info.param) ? "RoundRobin" : "CostModel");
                         });

}  // namespace
}  // namespace rill::testing
