// Adam's vector lanes (the widest this CPU has: AVX-512, AVX or SSE2) give
// the bits of the element-by-element update, for every length around the
// lane widths and for float and double; the tail left to AdamElement is
// what the lanes did not take.
#include "ops/optimizer/adam_lanes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace rill {
namespace {

template <class T>
void CheckLanesMatchElements() {
  AdamCoefficients<T> c;
  c.beta1 = T(0.9);
  c.one_minus_beta1 = T(1) - c.beta1;
  c.beta2 = T(0.999);
  c.one_minus_beta2 = T(1) - c.beta2;
  c.step_size = T(1e-3) / (T(1) - T(0.9) * T(0.9));
  c.bias_correction2_sqrt = std::sqrt(T(1) - T(0.999) * T(0.999));
  c.epsilon = T(1e-8);
  c.decay = T(1) - T(1e-3) * T(0.01);
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  // An empty range: the lanes take nothing (and touch nothing).
  T* none = nullptr;
  EXPECT_EQ(AdamLanes(none, none, none, none, 0, c), 0);
  for (int64_t n = 1; n <= 70; ++n) {
    std::vector<T> p(n), m(n), v(n), g(n);
    for (int64_t i = 0; i < n; ++i) {
      p[i] = static_cast<T>(normal(rng));
      m[i] = static_cast<T>(0.1 * normal(rng));
      v[i] = static_cast<T>(std::abs(0.01 * normal(rng)));
      g[i] = static_cast<T>(normal(rng));
    }
    std::vector<T> ep = p, em = m, ev = v;
    for (int64_t i = 0; i < n; ++i) AdamElement(ep[i], em[i], ev[i], g[i], c);
    const int64_t done = AdamLanes(p.data(), m.data(), v.data(), g.data(), n, c);
    ASSERT_GE(done, 0);
    ASSERT_LE(done, n);
    for (int64_t i = done; i < n; ++i) AdamElement(p[i], m[i], v[i], g[i], c);
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    EXPECT_EQ(std::memcmp(p.data(), ep.data(), bytes), 0) << "param, n = " << n;
    EXPECT_EQ(std::memcmp(m.data(), em.data(), bytes), 0) << "moment1, n = " << n;
    EXPECT_EQ(std::memcmp(v.data(), ev.data(), bytes), 0) << "moment2, n = " << n;
#if defined(__x86_64__)
    // x86-64 always has SSE2: the lanes take all but a tail of under 16.
    EXPECT_GT(done + 16, n) << "n = " << n;
#endif
  }
}

TEST(AdamLanesTest, Float32LanesGiveTheElementUpdateBits) { CheckLanesMatchElements<float>(); }
TEST(AdamLanesTest, Float64LanesGiveTheElementUpdateBits) { CheckLanesMatchElements<double>(); }

}  // namespace
}  // namespace rill
