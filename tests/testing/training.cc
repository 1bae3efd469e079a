#include "tests/testing/training.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace rill::testing {

Tensor CyclicLabels(int64_t batch, int step, int classes) {
  Tensor y(DataType::kInt64, {batch, 1});
  for (int64_t i = 0; i < batch; ++i) y.mutable_data<int64_t>()[i] = (i * 3 + step) % classes;
  return y;
}

void ExpectBitEqual(const std::vector<Tensor>& want, const std::vector<Tensor>& got,
                    const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].bytes(), got[i].bytes());
    EXPECT_EQ(std::memcmp(want[i].raw_data(), got[i].raw_data(), want[i].bytes()), 0)
        << what << ": parameter " << i << " differs";
  }
}

double RelativeDifference(const Tensor& got, const Tensor& want) {
  double diff = 0, norm = 0, worst = 0, largest = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double d = got.GetAsDouble(i) - want.GetAsDouble(i);
    diff += d * d;
    norm += want.GetAsDouble(i) * want.GetAsDouble(i);
    worst = std::max(worst, std::abs(d));
    largest = std::max(largest, std::abs(want.GetAsDouble(i)));
  }
  const double relative = std::sqrt(diff / std::max(norm, 1e-300));
  std::printf("relative difference %.3g (largest element difference %.3g of the largest value)\n",
              relative, worst / std::max(largest, 1e-300));
  return relative;
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

void ExpectSameTensor(const Tensor& actual, const Tensor& expected) {
  ASSERT_TRUE(actual.initialized());
  EXPECT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(actual.bytes(), expected.bytes());
  if (expected.bytes() > 0) {
    EXPECT_EQ(std::memcmp(actual.raw_data(), expected.raw_data(), expected.bytes()), 0);
  }
}

}  // namespace rill::testing
