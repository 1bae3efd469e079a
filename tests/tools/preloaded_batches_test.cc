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
#include "tests/testing/image_sets.h"

namespace rill {
namespace {

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
  const ImageDataset set = testing::CountingImageSet(103, 7);
  PreloadedBatches batches(set, {.prefetch = GetParam()});
  for (int epoch = 0; epoch < 3; ++epoch) {
    const std::vector<int64_t> order = testing::ShuffledOrder(103, static_cast<uint64_t>(epoch));
    const auto ranges = testing::StepRanges(103, 16);
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
  const ImageDataset set = testing::CountingImageSet(64, 3);
  PreloadedBatches batches(set, {.prefetch = 2});
  batches.StartEpoch(testing::ShuffledOrder(64, 1), testing::StepRanges(64, 8));
  PreloadedBatches::Batch b;
  ASSERT_TRUE(batches.Next(&b));
  ASSERT_TRUE(batches.Next(&b));
  // A resumed job's epoch: its steps start at row 24.
  const std::vector<int64_t> order = testing::ShuffledOrder(64, 2);
  const auto ranges = testing::StepRanges(64, 8, 24);
  batches.StartEpoch(order, ranges);
  for (const auto& range : ranges) {
    ASSERT_TRUE(batches.Next(&b));
    ExpectBatch(b, order, range, 3);
  }
  EXPECT_FALSE(batches.Next(&b));
}

TEST(PreloadedBatches, ReleasedBatchesAreWrittenIntoTheSameBuffers) {
  const ImageDataset set = testing::CountingImageSet(400, 5);
  PreloadedBatches batches(set, {.prefetch = 2});
  batches.StartEpoch(testing::ShuffledOrder(400, 3), testing::StepRanges(400, 10));
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
  const ImageDataset set = testing::CountingImageSet(200, 4);
  PreloadedBatches batches(set, {.prefetch = 1});
  const std::vector<int64_t> order = testing::ShuffledOrder(200, 4);
  const auto ranges = testing::StepRanges(200, 10);
  batches.StartEpoch(order, ranges);
  std::vector<PreloadedBatches::Batch> kept;
  PreloadedBatches::Batch b;
  while (batches.Next(&b)) kept.push_back(b);
  ASSERT_EQ(kept.size(), ranges.size());
  for (size_t i = 0; i < kept.size(); ++i) ExpectBatch(kept[i], order, ranges[i], 4);
}

TEST(PreloadedBatches, APlanOutsideTheSetFailsNamingTheStep) {
  const ImageDataset set = testing::CountingImageSet(10, 2);
  PreloadedBatches batches(set, {.prefetch = 2});
  try {
    batches.StartEpoch(testing::ShuffledOrder(10, 0), {{0, 5}, {5, 12}});
    FAIL() << "a range past the order was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("step 1 takes rows [5, 12)"), std::string::npos)
        << e.what();
  }
  std::vector<int64_t> order = testing::ShuffledOrder(10, 0);
  order[3] = 10;
  EXPECT_THROW(batches.StartEpoch(order, {{0, 5}}), Error);
  PreloadedBatches::Batch b;
  EXPECT_FALSE(batches.Next(&b)) << "a refused plan starts no epoch";
}

TEST(PreloadedBatches, NegativePrefetchIsRefused) {
  const ImageDataset set = testing::CountingImageSet(4, 2);
  EXPECT_THROW(PreloadedBatches(set, {.prefetch = -1}), Error);
}

}  // namespace
}  // namespace rill
