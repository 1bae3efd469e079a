// Tests of SelectedRows: merging repeats, densifying, merging parts.
#include "rill/selected_rows.h"

#include <gtest/gtest.h>

#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::MakeTensor;
using testing::ToDoubles;

SelectedRows Rows(std::vector<int64_t> rows, std::vector<double> values, int64_t height) {
  SelectedRows s;
  s.rows = std::move(rows);
  s.height = height;
  s.value = MakeTensor<double>({static_cast<int64_t>(s.rows.size()), 2}, values);
  return s;
}

TEST(SelectedRowsTest, MergedSortsRowsAndSumsRepeatsInOrder) {
  const SelectedRows s = Rows({3, 1, 3}, {1, 2, 3, 4, 10, 20}, 5);
  const SelectedRows m = s.Merged();
  EXPECT_EQ(m.rows, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ToDoubles(m.value), (std::vector<double>{3, 4, 11, 22}));
  EXPECT_EQ(m.height, 5);
}

TEST(SelectedRowsTest, ToDenseFillsOtherRowsWithZeros) {
  const Tensor dense = Rows({2, 0, 2}, {1, 1, 2, 2, 3, 3}, 3).ToDense();
  EXPECT_EQ(dense.shape(), (Shape{3, 2}));
  EXPECT_EQ(ToDoubles(dense), (std::vector<double>{2, 2, 0, 0, 4, 4}));
}

TEST(SelectedRowsTest, MergingPartsConcatenatesThenSums) {
  const SelectedRows a = Rows({0, 4}, {1, 2, 3, 4}, 6);
  const SelectedRows b = Rows({4, 5}, {10, 20, 30, 40}, 6);
  const SelectedRows m = MergeSelectedRows({&a, &b});
  EXPECT_EQ(m.rows, (std::vector<int64_t>{0, 4, 5}));
  EXPECT_EQ(ToDoubles(m.value), (std::vector<double>{1, 2, 13, 24, 30, 40}));
}

TEST(SelectedRowsTest, PartsOfDifferentHeightsOrRowsOutOfRangeAreErrors) {
  const SelectedRows a = Rows({0}, {1, 2}, 6);
  const SelectedRows b = Rows({0}, {1, 2}, 7);
  EXPECT_THROW(MergeSelectedRows({&a, &b}), Error);
  const SelectedRows far = Rows({9}, {1, 2}, 6);
  EXPECT_THROW(far.Merged(), Error);
}

}  // namespace
}  // namespace rill
