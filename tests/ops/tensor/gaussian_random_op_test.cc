// Tests of gaussian_random.
#include <gtest/gtest.h>

#include <cmath>

#include "rill/error.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

Tensor Gaussian(const std::vector<int64_t>& shape, float mean, float std, int seed,
                const std::string& dtype = "float32") {
  return RunOp({"gaussian_random", {}, {{"Out", 1}}, [&](proto::OpDesc* op) {
                  SetAttr(op, "shape", shape);
                  SetAttr(op, "dtype", dtype);
                  SetAttr(op, "mean", mean);
                  SetAttr(op, "std", std);
                  SetAttr(op, "seed", seed);
                }})["Out"][0];
}

TEST(GaussianRandomOpTest, SameSeedSameValues) {
  const Tensor a = Gaussian({7, 9}, 0, 1, 5);
  EXPECT_EQ(a.shape(), (Shape{7, 9}));
  EXPECT_EQ(a.dtype(), DataType::kFloat32);
  EXPECT_EQ(ToDoubles(a), ToDoubles(Gaussian({7, 9}, 0, 1, 5)));
}

TEST(GaussianRandomOpTest, DifferentSeedsDifferentValues) {
  const auto a = ToDoubles(Gaussian({101}, 0, 1, 1));  // odd count: the last value is unpaired
  const auto b = ToDoubles(Gaussian({101}, 0, 1, 2));
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 3);
}

TEST(GaussianRandomOpTest, StatisticsMatchTheDistribution) {
  for (const std::string dtype : {"float32", "float64"}) {
    const Tensor t = Gaussian({200001}, 1.5f, 2.0f, 3, dtype);
    EXPECT_EQ(t.dtype(), ParseDataType(dtype));
    const auto v = ToDoubles(t);
    double sum = 0, sum_sq = 0;
    int64_t within_one = 0, within_two = 0;
    for (double x : v) {
      sum += x;
      sum_sq += x * x;
      within_one += std::abs(x - 1.5) < 2.0;
      within_two += std::abs(x - 1.5) < 4.0;
    }
    const double n = static_cast<double>(v.size());
    const double mean = sum / n;
    const double stddev = std::sqrt(sum_sq / n - mean * mean);
    EXPECT_NEAR(mean, 1.5, 0.03) << dtype;
    EXPECT_NEAR(stddev, 2.0, 0.03) << dtype;
    // Normal, not merely the right moments: 68.27% within one std, 95.45% within two.
    EXPECT_NEAR(within_one / n, 0.6827, 0.01) << dtype;
    EXPECT_NEAR(within_two / n, 0.9545, 0.01) << dtype;
  }
}

TEST(GaussianRandomOpTest, ZeroStdGivesTheMean) {
  EXPECT_EQ(ToDoubles(Gaussian({5}, 0.25f, 0, 1, "float64")), std::vector<double>(5, 0.25));
}

TEST(GaussianRandomOpTest, RejectsBadAttributes) {
  EXPECT_THROW(Gaussian({4}, 0, -1, 1), Error);          // negative std
  EXPECT_THROW(Gaussian({4}, 0, 1, 1, "int64"), Error);  // not a float type
  EXPECT_THROW(Gaussian({-3}, 0, 1, 1), Error);          // negative dim
}

}  // namespace
}  // namespace rill::testing
