// Bad input to sync_batch_norm's ops: statistics of the wrong type or size,
// statistics that count no rows, and a forward op without the variable its
// gradient's sums go through — each refused with an error naming the op.
// (Their numbers are checked against batch_norm and against one place on
// the whole batch in tests/actors/data_parallel_test.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace sync_batch_norm_op_test {

using Slots = std::vector<std::pair<std::string, std::vector<Tensor>>>;

// sync_batch_norm's inputs for X [4, 2] with `stats` as Stats.
Slots Inputs(const Tensor& stats) {
  return {
      {"X", {RandomTensor({4, 2}, 1, -1, 1)}},         {"Scale", {MakeTensor<double>({2}, {1, 1})}},
      {"Bias", {MakeTensor<double>({2}, {0, 0})}},     {"Mean", {MakeTensor<double>({2}, {0, 0})}},
      {"Variance", {MakeTensor<double>({2}, {1, 1})}}, {"Stats", {stats}}};
}

const std::vector<std::pair<std::string, int>> kOutputs = {
    {"Y", 1}, {"MeanOut", 1}, {"VarianceOut", 1}, {"SavedMean", 1}, {"SavedVariance", 1}};

void ExpectRefused(const Tensor& stats, const std::string& needle) {
  try {
    RunOp({"sync_batch_norm", Inputs(stats), kOutputs, {}});
    FAIL() << "sync_batch_norm ran with Stats " << stats.Describe();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SyncBatchNormOpTest, StatisticsOfTheWrongTypeSizeOrCountAreRefused) {
  ExpectRefused(MakeTensor<float>({5}, {1, 2, 3, 4, 4}), "sync_batch_norm: Stats");
  ExpectRefused(MakeTensor<double>({4}, {1, 2, 3, 4}), "must be [5] float64");
  ExpectRefused(MakeTensor<double>({5}, {0, 0, 0, 0, 0}), "counts no rows over the places");
  // The statistics batch_norm_stats gives normalise (the good case runs).
  auto stats = RunOp({"batch_norm_stats", {{"X", {Inputs({})[0].second[0]}}}, {{"Stats", 1}}, {}});
  EXPECT_EQ(stats["Stats"][0].GetAsDouble(4), 4.0);  // the rows counted
  EXPECT_NO_THROW(RunOp({"sync_batch_norm", Inputs(stats["Stats"][0]), kOutputs, {}}));
}

TEST(SyncBatchNormOpTest, AForwardOpWithoutItsGradStatsVariableHasNoGradient) {
  proto::OpDesc fwd;
  fwd.set_type("sync_batch_norm");
  for (const char* slot : {"X", "Scale", "Bias", "Mean", "Variance", "Stats"}) {
    SetInput(&fwd, slot, {std::string("v_") + slot});
  }
  for (const char* slot : {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}) {
    SetOutput(&fwd, slot, {std::string("v_") + slot});
  }
  try {
    GetOpSchema("sync_batch_norm").grad_maker()(fwd);
    FAIL() << "a gradient without grad_stats";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grad_stats names no variable"), std::string::npos)
        << e.what();
  }
  SetAttr(&fwd, "grad_stats", std::string("v_grad_stats"));
  const auto grads = GetOpSchema("sync_batch_norm").grad_maker()(fwd);
  ASSERT_EQ(grads.size(), 3u);
  EXPECT_EQ(grads[1].type(), "sync_places_sum");
  EXPECT_EQ(InputVars(grads[1], "X"), (std::vector<std::string>{"v_grad_stats"}));
}

}  // namespace sync_batch_norm_op_test
}  // namespace rill::testing
