// VectorExp and VectorErf (ops/math/vector_math.h): within 3 float32 ulps of
// the exact values, a value's result the same wherever it stands in an array
// (full vectors and the padded tail alike), and the IEEE special values kept.
#include "ops/math/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace rill {
namespace {

// |got - want| in units of float32's spacing at want.
double Ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double spacing =
      std::nextafter(std::abs(w), std::numeric_limits<float>::infinity()) - std::abs(w);
  return std::abs(static_cast<double>(got) - want) / std::max(spacing, 1e-45);
}

template <class F, class Exact>
void CheckFloat(F f, Exact exact, double lo, double hi) {
  const int n = 2001;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(lo + (hi - lo) * i / (n - 1));
  f(x.data(), y.data(), n);
  for (int i = 0; i < n; ++i) {
    EXPECT_LE(Ulps(y[i], exact(static_cast<double>(x[i]))), 3.0) << "x = " << x[i];
    // The same value alone (a padded tail of one) and at every offset of a short array.
    float alone = 0;
    f(&x[i], &alone, 1);
    EXPECT_EQ(alone, y[i]) << "x = " << x[i];
  }
  for (int len = 1; len <= 9; ++len) {
    for (int start = 0; start + len <= 12; ++start) {
      std::vector<float> part(x.begin() + 700 + start, x.begin() + 700 + start + len);
      f(part.data(), part.data(), len);  // in place
      for (int k = 0; k < len; ++k) ASSERT_EQ(part[k], y[700 + start + k]) << len << " " << start;
    }
  }
}

TEST(VectorMathTest, ExpIsWithinThreeUlpsAndTheSameAnywhereInAnArray) {
  CheckFloat([](const float* x, float* y, int64_t n) { VectorExp(x, y, n); },
             [](double v) { return std::exp(v); }, -80.0, 80.0);
}

TEST(VectorMathTest, ErfIsWithinThreeUlpsAndTheSameAnywhereInAnArray) {
  CheckFloat([](const float* x, float* y, int64_t n) { VectorErf(x, y, n); },
             [](double v) { return std::erf(v); }, -6.0, 6.0);
}

TEST(VectorMathTest, SpecialValuesAndDoublesAreStdsOwn) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const float x[5] = {-inf, inf, nan, 0.0f, -0.0f};
  float e[5], r[5];
  VectorExp(x, e, 5);
  VectorErf(x, r, 5);
  EXPECT_EQ(e[0], 0.0f);
  EXPECT_EQ(e[1], inf);
  EXPECT_TRUE(std::isnan(e[2]));
  EXPECT_EQ(e[3], 1.0f);
  EXPECT_EQ(r[0], -1.0f);
  EXPECT_EQ(r[1], 1.0f);
  EXPECT_TRUE(std::isnan(r[2]));
  EXPECT_EQ(r[3], 0.0f);
  const double d[3] = {-1.5, 0.25, 3.0};
  double de[3], dr[3];
  VectorExp(d, de, 3);
  VectorErf(d, dr, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(de[i], std::exp(d[i]));
    EXPECT_EQ(dr[i], std::erf(d[i]));
  }
}

}  // namespace
}  // namespace rill
