// One rule for feeds (README, "Feeds"), checked case by case on every
// executor: the reference Executor, the actor executor with one iteration in
// flight and with two (runs overlapping), and on two places (feeds split by
// rows, fetches merged). Each case gives the same answer, or the same error,
// everywhere.
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <string>
#include <vector>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

// An inference program: t = 2 x; y = t + 1. `label` is declared and never used.
struct Inference {
  Program main, startup;
  Var x, label, t, y;
};

void BuildInference(Inference* p) {
  Builder b(&p->main, &p->startup, 1);
  p->x = b.Data("x", {-1, 3});
  p->label = b.Data("label", {-1, 1}, DataType::kInt64);
  p->t = b.Scale(p->x, 2.0f);
  p->y = b.Scale(p->t, 1.0f, 1.0f);
}

Tensor Rows(double first) {
  return testing::MakeTensor<float>({4, 3}, {float(first), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

Tensor Labels() { return testing::MakeTensor<int64_t>({4, 1}, {3, 1, 4, 1}); }

using RunFn = std::function<std::vector<Tensor>(const FeedList&, const std::vector<std::string>&)>;

struct ExecutorCase {
  std::string name;
  std::function<void(const Inference&, Scope*, const std::function<void(RunFn)>&)> with_run;
};

std::vector<ExecutorCase> Executors() {
  auto actors = [](int places, int in_flight) {
    return [places, in_flight](const Inference& p, Scope* scope,
                               const std::function<void(RunFn)>& body) {
      ExecutionStrategy strategy;
      strategy.num_threads = 2;
      strategy.max_iterations_in_flight = in_flight;
      ParallelExecutor exe(
          p.main.desc(), scope,
          {.places = std::vector<Place>(places, Place::Cpu()), .strategy = strategy});
      body([&exe, in_flight](const FeedList& feeds, const std::vector<std::string>& fetches) {
        if (in_flight == 1) return exe.Run(feeds, fetches);
        // Two runs at once: both must follow the rule, and agree.
        auto first = exe.RunAsync(feeds, fetches);
        auto second = exe.RunAsync(feeds, fetches);
        std::vector<Tensor> out = first.get();
        std::vector<Tensor> again = second.get();
        EXPECT_EQ(out.size(), again.size());
        for (size_t i = 0; i < out.size() && i < again.size(); ++i)
          EXPECT_EQ(testing::ToDoubles(out[i]), testing::ToDoubles(again[i])) << "fetch " << i;
        return out;
      });
    };
  };
  return {
      {"reference",
       [](const Inference& p, Scope* scope, const std::function<void(RunFn)>& body) {
         Executor exe;
         auto step = exe.Prepare(p.main.desc(), scope);
         body([&](const FeedList& feeds, const std::vector<std::string>& fetches) {
           return exe.Run(*step, feeds, fetches);
         });
       }},
      {"actors, one iteration in flight", actors(1, 1)},
      {"actors, two iterations in flight", actors(1, 2)},
      {"actors, cpu:2", actors(2, 1)},
  };
}

// Runs `body` with each executor over a fresh scope.
void OnEveryExecutor(const std::function<void(const Inference&, RunFn)>& body) {
  for (const ExecutorCase& executor : Executors()) {
    SCOPED_TRACE(executor.name);
    Inference p;
    BuildInference(&p);
    Scope scope;
    executor.with_run(p, &scope, [&](RunFn run) { body(p, std::move(run)); });
  }
}

const std::vector<double> kY = {3, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23};

TEST(FeedRuleTest, AFedVariableNoOpUsesIsAcceptedAndKeepsItsValue) {
  OnEveryExecutor([](const Inference& p, const RunFn& run) {
    std::vector<Tensor> out =
        run({{p.x.name, Rows(1)}, {p.label.name, Labels()}}, {p.y.name, p.label.name});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(testing::ToDoubles(out[0]), kY);
    EXPECT_EQ(testing::ToDoubles(out[1]), (std::vector<double>{3, 1, 4, 1}));
  });
}

TEST(FeedRuleTest, AFedVariableTheProgramOverwritesIsAcceptedAndOverwritten) {
  OnEveryExecutor([](const Inference& p, const RunFn& run) {
    // t is written by op 0 before op 1 reads it: the fed value is overwritten.
    std::vector<Tensor> out =
        run({{p.x.name, Rows(1)}, {p.t.name, Rows(100)}}, {p.y.name, p.t.name});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(testing::ToDoubles(out[0]), kY);
    EXPECT_EQ(testing::ToDoubles(out[1])[0], 2.0);
  });
}

TEST(FeedRuleTest, AMissingFeedNamesTheOpThatReadsIt) {
  OnEveryExecutor([](const Inference& p, const RunFn& run) {
    try {
      run({{p.label.name, Labels()}}, {p.y.name});
      ADD_FAILURE() << "ran without x";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("op 0 (scale): feed \"x\" is missing"),
                std::string::npos)
          << e.what();
    }
    // The executor is still usable.
    EXPECT_EQ(testing::ToDoubles(run({{p.x.name, Rows(1)}}, {p.y.name})[0]), kY);
  });
}

TEST(FeedRuleTest, AFeedThatIsNotAVariableOrHasTheWrongShapeIsRefused) {
  OnEveryExecutor([](const Inference& p, const RunFn& run) {
    auto expect_error = [&](const FeedList& feeds, const std::string& part) {
      try {
        run(feeds, {p.y.name});
        ADD_FAILURE() << "expected an error mentioning " << part;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      }
    };
    expect_error({{p.x.name, Rows(1)}, {"nope", Labels()}}, "feed \"nope\" is not a variable");
    expect_error({{p.x.name, Labels()}}, "int64");
  });
}

// Refused before the step runs (a training step would otherwise have updated
// the parameters before saying the fetch was wrong), with one message.
TEST(FeedRuleTest, AFetchThatIsNotAVariableIsRefusedBeforeTheRun) {
  OnEveryExecutor([](const Inference& p, const RunFn& run) {
    try {
      run({{p.x.name, Rows(1)}}, {p.y.name, "nope"});
      ADD_FAILURE() << "fetched an undeclared variable";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
      EXPECT_NE(std::string(e.what()).find("fetch \"nope\" is not a variable of block 0"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(testing::ToDoubles(run({{p.x.name, Rows(1)}}, {p.y.name})[0]), kY);
  });
}

}  // namespace
}  // namespace rill
