#include "tests/testing/image_sets.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace rill::testing {

ImageDataset CountingImageSet(int64_t rows, int64_t width) {
  ImageDataset set;
  set.rows = 1;
  set.cols = width;
  float* x = set.images.Allocate<float>({rows, width});
  int64_t* y = set.labels.Allocate<int64_t>({rows, 1});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < width; ++k) x[r * width + k] = static_cast<float>(r * 1000 + k);
    y[r] = r % 10;
  }
  return set;
}

std::vector<int64_t> ShuffledOrder(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

std::vector<PreloadedBatches::Range> StepRanges(size_t n, size_t batch, size_t first) {
  std::vector<PreloadedBatches::Range> ranges;
  for (size_t begin = first; begin < n; begin += batch) {
    ranges.emplace_back(begin, std::min(n, begin + batch));
  }
  return ranges;
}

}  // namespace rill::testing
