// PreloadedBatches on a small synthetic image set: every step's batch holds
// the rows its range names, whatever the prefetch depth; epochs restart
// cleanly mid-way; buffers are recycled; bad plans fail naming the step.
#include "tools/datasets/preloaded_batches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "rill/error.h"
#include "runtime/core/buffer_pool.h"

namespace rill {
namespace {

// Row r holds pixels r * 1000 + k and label r % 10.
ImageDataset MakeSet(int64_t rows, int64_t width) {
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

std::vector<int64_t> Shuffled(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// Steps of `batch` rows (the last one shorter) over rows [first, n).
std::vector<PreloadedBatches::Range> Ranges(size_t n, size_t batch, size_t first = 0) {
  std::vector<PreloadedBatches::Range> ranges;
  for (size_t begin = first; begin < n; begin += batch) {
    ranges.emplace_back(begin, std::min(n, begin + batch));
  }
  return ranges;
}

void ExpectBatch(const PreloadedBatches::Batch& b, const std::vector<int64_t>& order,
                 PreloadedBatches::Range range, int64_t width) {
  const auto rows = static_cast<int64_t>(range.second - range.first);
  ASSERT_EQ(b.images.shape(), (Shape{rows, width}));
  ASSERT_EQ(b.labels.shape(), (Shape{rows, 1}));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row = order[range.first + static_cast<size_t>(i)];
    EXPECT_EQ(b.labels.data<int64_t>()[i], row % 10) << "row " << i;
    for (int64_t k = 0; k < width; ++k) {
      ASSERT_EQ(b.images.data<float>()[i * width + k], static_cast<float>(row * 1000 + k))
          << "row " << i << " pixel " << k;
    }
  }
}

class PreloadedBatchesTest : public ::testing::TestWithParam<int> {};

TEST_P(PreloadedBatchesTest, EveryStepHoldsTheRowsOfItsRange) {
  const ImageDataset set = MakeSet(103, 7);
  PreloadedBatches batches(set, {.prefetch = GetParam()});
  for (int epoch = 0; epoch < 3; ++epoch) {
    const std::vector<int64_t> order = Shuffled(103, static_cast<uint64_t>(epoch));
    const auto ranges = Ranges(103, 16);
    batches.StartEpoch(order, ranges);
    PreloadedBatches::Batch b;
    for (const auto& range : ranges) {
      ASSERT_TRUE(batches.Next(&b));
      ExpectBatch(b, order, range, 7);
    }
    EXPECT_FALSE(batches.Next(&b));
    EXPECT_FALSE(batches.Next(&b)) << "an ended epoch stays ended";
  }
  const PreloadedBatches::Counters c = batches.counters();
  EXPECT_EQ(c.batches, 3 * 7);
  EXPECT_EQ(c.ready + c.waited, c.batches);
}

INSTANTIATE_TEST_SUITE_P(Prefetch, PreloadedBatchesTest, ::testing::Values(0, 1, 2, 5));

TEST(PreloadedBatches, AnEpochStartedMidWayReplacesTheOldOne) {
  const ImageDataset set = MakeSet(64, 3);
  PreloadedBatches batches(set, {.prefetch = 2});
  batches.StartEpoch(Shuffled(64, 1), Ranges(64, 8));
  PreloadedBatches::Batch b;
  ASSERT_TRUE(batches.Next(&b));
  ASSERT_TRUE(batches.Next(&b));
  // A resumed job's epoch: its steps start at row 24.
  const std::vector<int64_t> order = Shuffled(64, 2);
  const auto ranges = Ranges(64, 8, 24);
  batches.StartEpoch(order, ranges);
  for (const auto& range : ranges) {
    ASSERT_TRUE(batches.Next(&b));
    ExpectBatch(b, order, range, 3);
  }
  EXPECT_FALSE(batches.Next(&b));
}

TEST(PreloadedBatches, ReleasedBatchesAreWrittenIntoTheSameBuffers) {
  const ImageDataset set = MakeSet(400, 5);
  PreloadedBatches batches(set, {.prefetch = 2});
  batches.StartEpoch(Shuffled(400, 3), Ranges(400, 10));
  std::set<const void*> buffers;
  PreloadedBatches::Batch b;
  // The ring has prefetch + 2 slots; the driver holds one batch at a time.
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(batches.Next(&b));
    buffers.insert(b.images.raw_data());
  }
  const BufferPoolStats before = BufferPool::Instance().Stats();
  while (batches.Next(&b)) buffers.insert(b.images.raw_data());
  const BufferPoolStats after = BufferPool::Instance().Stats();
  EXPECT_EQ(after.fresh, before.fresh) << "a batch was gathered into new memory";
  EXPECT_EQ(after.reuses, before.reuses) << "a batch was gathered into a recycled pool block";
  EXPECT_LE(buffers.size(), 4u);
}

TEST(PreloadedBatches, ABatchKeptByTheCallerIsNeverOverwritten) {
  const ImageDataset set = MakeSet(200, 4);
  PreloadedBatches batches(set, {.prefetch = 1});
  const std::vector<int64_t> order = Shuffled(200, 4);
  const auto ranges = Ranges(200, 10);
  batches.StartEpoch(order, ranges);
  std::vector<PreloadedBatches::Batch> kept;
  PreloadedBatches::Batch b;
  while (batches.Next(&b)) kept.push_back(b);
  ASSERT_EQ(kept.size(), ranges.size());
  for (size_t i = 0; i < kept.size(); ++i) ExpectBatch(kept[i], order, ranges[i], 4);
}

TEST(PreloadedBatches, APlanOutsideTheSetFailsNamingTheStep) {
  const ImageDataset set = MakeSet(10, 2);
  PreloadedBatches batches(set, {.prefetch = 2});
  try {
    batches.StartEpoch(Shuffled(10, 0), {{0, 5}, {5, 12}});
    FAIL() << "a range past the order was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("step 1 takes rows [5, 12)"), std::string::npos)
        << e.what();
  }
  std::vector<int64_t> order = Shuffled(10, 0);
  order[3] = 10;
  EXPECT_THROW(batches.StartEpoch(order, {{0, 5}}), Error);
  PreloadedBatches::Batch b;
  EXPECT_FALSE(batches.Next(&b)) << "a refused plan starts no epoch";
}

TEST(PreloadedBatches, NegativePrefetchIsRefused) {
  const ImageDataset set = MakeSet(4, 2);
  EXPECT_THROW(PreloadedBatches(set, {.prefetch = -1}), Error);
}

}  // namespace
}  // namespace rill
