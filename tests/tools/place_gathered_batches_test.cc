// PlaceGatheredBatches on a small synthetic image set: each place's slice of
// a step holds the rows SplitBatch would give it, gathered on the thread that
// reads; places read at their own pace; epochs restart the places; plans that
// cannot be split, and places that do not exist, are refused by name.
#include "tools/datasets/place_gathered_batches.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "rill/error.h"
#include "runtime/core/place_io.h"
#include "tests/testing/image_sets.h"

namespace rill {
namespace {

// Reads every step of an epoch for `place` and checks each slice against the
// rows of its step that SplitRows assigns to the place.
void ReadPlace(PlaceGatheredBatches& batches, int place, int places,
               const std::vector<int64_t>& order,
               const std::vector<PreloadedBatches::Range>& ranges, int64_t width) {
  PipelineBatch b;
  for (size_t step = 0; step < ranges.size(); ++step) {
    bool ended = true;
    ASSERT_TRUE(batches.TryNext(place, &b, &ended)) << "place " << place << " step " << step;
    EXPECT_FALSE(ended);
    EXPECT_EQ(b.step, static_cast<int64_t>(step));
    EXPECT_TRUE(b.decoded_here);
    const auto parts =
        SplitRows(static_cast<int64_t>(ranges[step].second - ranges[step].first), places);
    size_t first = ranges[step].first;
    for (int p = 0; p < place; ++p) first += static_cast<size_t>(parts[static_cast<size_t>(p)]);
    const int64_t rows = parts[static_cast<size_t>(place)];
    ASSERT_EQ(b.fields.size(), 2u);
    ASSERT_EQ(b.fields[0].shape(), (Shape{rows, width}));
    ASSERT_EQ(b.fields[1].shape(), (Shape{rows, 1}));
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t row = order[first + static_cast<size_t>(i)];
      EXPECT_EQ(b.fields[1].data<int64_t>()[i], row % 10);
      ASSERT_EQ(b.fields[0].data<float>()[i * width + width - 1],
                static_cast<float>(row * 1000 + width - 1))
          << "place " << place << " step " << step << " row " << i;
    }
  }
  bool ended = false;
  EXPECT_FALSE(batches.TryNext(place, &b, &ended));
  EXPECT_TRUE(ended);
  EXPECT_FALSE(batches.Next(place, &b));
}

TEST(PlaceGatheredBatches, EachPlaceGathersItsPartOfEveryStep) {
  const ImageDataset set = testing::CountingImageSet(103, 5);
  for (int places : {1, 2, 3}) {
    PlaceGatheredBatches batches(set, places);
    for (int epoch = 0; epoch < 2; ++epoch) {
      const auto order = testing::ShuffledOrder(103, static_cast<uint64_t>(epoch));
      const auto ranges = testing::StepRanges(103, 16);  // the last step has 7 rows
      batches.StartEpoch(order, ranges);
      for (int p = places - 1; p >= 0; --p) ReadPlace(batches, p, places, order, ranges, 5);
    }
    EXPECT_EQ(batches.slices(), 2 * 7 * places);
  }
}

TEST(PlaceGatheredBatches, PlacesReadAtTheirOwnPaceOnTheirOwnThreads) {
  const ImageDataset set = testing::CountingImageSet(200, 3);
  PlaceGatheredBatches batches(set, 2);
  const auto order = testing::ShuffledOrder(200, 9);
  const auto ranges = testing::StepRanges(200, 10);
  batches.StartEpoch(order, ranges);
  std::thread other([&] { ReadPlace(batches, 1, 2, order, ranges, 3); });
  ReadPlace(batches, 0, 2, order, ranges, 3);
  other.join();
  EXPECT_EQ(batches.slices(), 40);
}

TEST(PlaceGatheredBatches, AnEpochStartedMidWayStartsEveryPlaceOver) {
  const ImageDataset set = testing::CountingImageSet(40, 2);
  PlaceGatheredBatches batches(set, 2);
  batches.StartEpoch(testing::ShuffledOrder(40, 1), testing::StepRanges(40, 8));
  PipelineBatch b;
  ASSERT_TRUE(batches.Next(0, &b));
  ASSERT_TRUE(batches.Next(0, &b));
  EXPECT_EQ(b.step, 1);
  const auto order = testing::ShuffledOrder(40, 2);
  batches.StartEpoch(order, testing::StepRanges(40, 8));
  ReadPlace(batches, 0, 2, order, testing::StepRanges(40, 8), 2);
  ReadPlace(batches, 1, 2, order, testing::StepRanges(40, 8), 2);
}

TEST(PlaceGatheredBatches, RefusesPlansItCannotSplitAndPlacesThatDoNotExist) {
  const ImageDataset set = testing::CountingImageSet(10, 2);
  EXPECT_THROW(PlaceGatheredBatches(set, 0), Error);
  PlaceGatheredBatches batches(set, 3);
  try {
    batches.StartEpoch(testing::ShuffledOrder(10, 0), {{0, 5}, {5, 7}});
    FAIL() << "a step of 2 rows cannot be split over 3 places";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("rows [5, 7)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(batches.StartEpoch(testing::ShuffledOrder(10, 0), {{0, 11}}),
               Error);  // past the order
  batches.StartEpoch(testing::ShuffledOrder(10, 0), {{0, 9}});
  PipelineBatch b;
  bool ended = false;
  try {
    batches.TryNext(3, &b, &ended);
    FAIL() << "there is no place 3";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
  }
}

}  // namespace
}  // namespace rill
