// parallel_do: a sub-block run on several places, each on a slice of the
// batch, trains to what the plain program reaches; its gradient sums the
// places' parameter gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"

namespace rill {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace parallel_do_test {

using testing::RandomTensor;
constexpr DataType kF64 = DataType::kFloat64;

// The per-example loss of a small classifier: built inline or inside parallel_do.
Var ExampleLoss(Builder& b, const Var& x, const Var& label) {
  Var h = b.Fc(x, 6, Activation::kTanh);
  return b.SoftmaxWithCrossEntropy(b.Fc(h, 3), label);
}

struct Built {
  Program main, startup;
  Var loss;
};

void Build(Built* m, int places) {
  Builder b(&m->main, &m->startup, 5);
  Var x = b.Data("x", {-1, 4}, kF64);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var per_example;
  if (places == 0) {
    per_example = ExampleLoss(b, x, label);
  } else {
    per_example = b.ParallelDo(places, {x, label}, [&](Builder& inner) {
      return std::vector<Var>{ExampleLoss(inner, x, label)};
    })[0];
  }
  m->loss = b.Mean(per_example);
  Adam(0.02f).Minimize(b, m->loss);
}

FeedList Batch(int step, int64_t rows) {
  Tensor y(DataType::kInt64, {rows, 1});
  for (int64_t i = 0; i < rows; ++i) y.mutable_data<int64_t>()[i] = (i + step) % 3;
  return {{"x", RandomTensor({rows, 4}, 40 + step)}, {"label", y}};
}

TEST(ParallelDoTest, TrainsLikeThePlainProgram) {
  for (int places : {2, 3}) {
    for (int64_t rows : {8, 7, 2}) {
      SCOPED_TRACE(StrCat(places, " places, ", rows, " rows"));
      Built plain, parallel;
      Build(&plain, 0);
      Build(&parallel, places);
      Scope plain_scope, parallel_scope;
      Executor reference;
      reference.Run(plain.startup.desc(), &plain_scope);
      reference.Run(parallel.startup.desc(), &parallel_scope);
      auto step = reference.Prepare(plain.main.desc(), &plain_scope);
      ParallelExecutor exe(parallel.main.desc(), &parallel_scope);
      for (int s = 0; s < 10; ++s) {
        const double want =
            reference.Run(*step, Batch(s, rows), {plain.loss.name})[0].GetAsDouble(0);
        const double got = exe.Run(Batch(s, rows), {parallel.loss.name})[0].GetAsDouble(0);
        EXPECT_NEAR(got, want, 1e-10 * (1 + std::abs(want))) << "loss at step " << s;
      }
      for (const char* name : {"fc_0.w", "fc_0.b", "fc_1.w", "fc_1.b"}) {
        const Tensor& a = plain_scope.GetTensor(name);
        const Tensor& b = parallel_scope.GetTensor(name);
        double diff = 0, norm = 0;
        for (int64_t i = 0; i < a.numel(); ++i) {
          diff += std::pow(a.GetAsDouble(i) - b.GetAsDouble(i), 2);
          norm += std::pow(a.GetAsDouble(i), 2);
        }
        EXPECT_LE(std::sqrt(diff / norm), 1e-5) << name;
      }
    }
  }
}

TEST(ParallelDoTest, TheReferenceExecutorSaysItCannotRunIt) {
  Built parallel;
  Build(&parallel, 2);
  Scope scope;
  Executor reference;
  reference.Run(parallel.startup.desc(), &scope);
  try {
    reference.Run(parallel.main.desc(), &scope, Batch(0, 4), {parallel.loss.name});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel_do"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("actor executor"), std::string::npos) << e.what();
  }
}

}  // namespace parallel_do_test
}  // namespace rill
