// Small synthetic ImageDatasets and epoch plans for the tests of the readers
// over data held in memory (PreloadedBatches, PlaceGatheredBatches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tools/datasets/fashion_mnist.h"
#include "tools/datasets/preloaded_batches.h"

namespace rill::testing {

// `rows` examples of `width` pixels: row r holds pixels r * 1000 + k and label r % 10.
ImageDataset CountingImageSet(int64_t rows, int64_t width);
// 0 .. n-1 shuffled with mt19937_64(seed).
std::vector<int64_t> ShuffledOrder(int64_t n, uint64_t seed);
// Steps of `batch` rows (the last one shorter) over rows [first, n).
std::vector<PreloadedBatches::Range> StepRanges(size_t n, size_t batch, size_t first = 0);

}  // namespace rill::testing
