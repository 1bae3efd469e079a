// Splitting a batch over places: SplitRows's counts, and RowsOfPlace's slice
// of each place, which must be where SplitBatch cuts the batch.
#include "runtime/core/place_io.h"

#include <gtest/gtest.h>

namespace rill {
namespace {

TEST(PlaceIo, EachPlacesRowsAreWhereSplitBatchCutsTheBatch) {
  for (int places : {1, 2, 3, 4}) {
    for (int64_t rows : {0, 1, 2, 7, 8, 9, 256}) {
      const std::vector<int64_t> split = SplitRows(rows, places);
      Tensor batch(DataType::kInt64, {rows, 1});
      for (int64_t r = 0; r < rows; ++r) batch.mutable_data<int64_t>()[r] = r;
      const std::vector<Tensor> slices = SplitBatch(batch, split);
      int64_t next = 0;
      for (int p = 0; p < places; ++p) {
        const PlaceRows mine = RowsOfPlace(rows, places, p);
        EXPECT_EQ(mine.begin, next) << rows << " rows, place " << p << " of " << places;
        EXPECT_EQ(mine.count, slices[static_cast<size_t>(p)].dim(0));
        if (mine.count > 0) {
          EXPECT_EQ(slices[static_cast<size_t>(p)].data<int64_t>()[0], mine.begin);
        }
        next += mine.count;
      }
      EXPECT_EQ(next, rows);
    }
  }
}

}  // namespace
}  // namespace rill
