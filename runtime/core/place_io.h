// Feeding and fetching across places: a fed batch is split along dim 0 into
// zero-copy slices, one per place (the first rows % places places get one row
// more; with fewer rows than places some get none), and a fetched variable's
// per-place values are merged back into one.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/feeds.h"
#include "rill/tensor.h"

namespace rill {

// Rows each of `places` places gets of a batch of `rows`.
std::vector<int64_t> SplitRows(int64_t rows, int places);

// Place `place`'s slice of a batch of `rows` split by SplitRows: its first
// row and how many rows it has.
struct PlaceRows {
  int64_t begin = 0;
  int64_t count = 0;
};
PlaceRows RowsOfPlace(int64_t rows, int places, int place);

// The slices of `batch` along dim 0 with the given row counts (zero copy).
std::vector<Tensor> SplitBatch(const Tensor& batch, const std::vector<int64_t>& rows);

// Merges per-place values. `weights` (for kMean) are each place's share of the
// batch; places with weight 0 do not count (their value is undefined: NaN means).
Tensor MergeFetch(FetchMerge how, const std::vector<Tensor>& values,
                  const std::vector<double>& weights);

}  // namespace rill
