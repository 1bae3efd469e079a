// GemmParts (ops/math/blas.h): C = op(A) * op(B) cut into blocks of rows or
// columns from the sizes alone; every transpose against a direct triple loop,
// and the same bits whether another thread takes blocks (as an executor's idle
// thread does) or the caller runs them all.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/math/blas.h"
#include "rill/parallel_for.h"
#include "tests/testing/helper_thread.h"

namespace rill {
namespace {

template <class T>
std::vector<T> Random(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(u(gen));
  return v;
}

// op(A) [m, k] * op(B) [k, n] by the definition, in double.
std::vector<double> Direct(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                           const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < k; ++l) {
        sum += (ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
      }
      c[i * n + j] = sum;
    }
  }
  return c;
}

struct Size {
  int64_t m, n, k;
};

TEST(GemmPartsTest, CutsRowsWhereThereAreManyElseColumnsAndNothingSmall) {
  EXPECT_EQ(GemmGridOf(1024, 1024, 3136).row_parts, 4);  // rows first
  EXPECT_EQ(GemmGridOf(1024, 1024, 3136).col_parts, 1);
  EXPECT_EQ(GemmGridOf(256, 3136, 1024).row_parts, 1);  // a batch of 256: columns
  EXPECT_EQ(GemmGridOf(256, 3136, 1024).col_parts, 12);
  EXPECT_EQ(GemmGridOf(32, 1024, 3136).col_parts, 4);
  EXPECT_EQ(GemmGridOf(32, 1024, 16).col_parts, 1);  // 0.5M multiply-adds: one GEMM
  EXPECT_EQ(GemmGridOf(0, 1024, 3136).row_parts * GemmGridOf(0, 1024, 3136).col_parts, 1);
}

TEST(GemmPartsTest, EveryTransposeMatchesTheDefinitionOnAnyThreads) {
  // Two row blocks, three column blocks of 366-367, one GEMM, k = 0.
  const std::vector<Size> sizes = {{1100, 40, 1000}, {24, 1100, 2000}, {8, 8, 8}, {30, 600, 0}};
  EXPECT_EQ(GemmGridOf(1100, 40, 1000).row_parts, 2);
  EXPECT_EQ(GemmGridOf(24, 1100, 2000).col_parts, 3);
  IdleHelpers helpers([] {});
  unsigned seed = 1;
  for (const Size& s : sizes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      SCOPED_TRACE(::testing::Message()
                   << s.m << "x" << s.n << "x" << s.k << " ta " << ta << " tb " << tb);
      const auto a = Random<double>(s.m * s.k, seed++);
      const auto b = Random<double>(s.k * s.n, seed++);
      std::vector<double> c(static_cast<size_t>(s.m * s.n), 7.0);  // overwritten, not added to
      GemmParts(ta, tb, s.m, s.n, s.k, a.data(), b.data(), c.data());
      const auto want = Direct(ta, tb, s.m, s.n, s.k, a, b);
      for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], want[i], 1e-11) << "element " << i;

      const auto af = Random<float>(s.m * s.k, seed++);
      const auto bf = Random<float>(s.k * s.n, seed++);
      std::vector<float> alone(static_cast<size_t>(s.m * s.n)), shared(alone.size());
      GemmParts(ta, tb, s.m, s.n, s.k, af.data(), bf.data(), alone.data());
      testing::HelperThread helper(helpers);
      ScopedParallelHelpers lend(&helpers);
      for (int rep = 0; rep < 3; ++rep) {
        GemmParts(ta, tb, s.m, s.n, s.k, af.data(), bf.data(), shared.data());
        EXPECT_EQ(std::memcmp(shared.data(), alone.data(), alone.size() * sizeof(float)), 0)
            << "repetition " << rep;
      }
    }
  }
}

}  // namespace
}  // namespace rill
