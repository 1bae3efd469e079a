#include "tools/datasets/place_gathered_batches.h"

#include "rill/error.h"
#include "runtime/core/place_io.h"

namespace rill {

PlaceGatheredBatches::PlaceGatheredBatches(const ImageDataset& set, int places)
    : set_(set), places_(places), next_step_(static_cast<size_t>(std::max(places, 0)), 0) {
  RILL_CHECK(places >= 1, kInvalidArgument, "PlaceGatheredBatches: places must be >= 1, got ",
             places);
}

void PlaceGatheredBatches::StartEpoch(std::vector<int64_t> order,
                                      std::vector<PreloadedBatches::Range> ranges) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [begin, end] : ranges) {
    RILL_CHECK(begin <= end && end <= order.size() && end - begin >= static_cast<size_t>(places_),
               kInvalidArgument, "PlaceGatheredBatches: rows [", begin, ", ", end,
               ") of an order of ", order.size(), " cannot be split over ", places_, " places");
  }
  order_ = std::move(order);
  ranges_ = std::move(ranges);
  next_step_.assign(static_cast<size_t>(places_), 0);
}

bool PlaceGatheredBatches::Next(int place, PipelineBatch* out) {
  bool ended = false;
  return TryNext(place, out, &ended);
}

bool PlaceGatheredBatches::TryNext(int place, PipelineBatch* out, bool* ended) {
  size_t step = 0;
  PreloadedBatches::Range rows;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RILL_CHECK(place >= 0 && place < places_, kOutOfRange, Describe(), ": no place ", place);
    step = next_step_[static_cast<size_t>(place)];
    *ended = step >= ranges_.size();
    if (*ended) return false;
    ++next_step_[static_cast<size_t>(place)];
    rows = ranges_[step];
  }
  // The place's part of the step's rows, where SplitBatch would cut the batch.
  const PlaceRows mine =
      RowsOfPlace(static_cast<int64_t>(rows.second - rows.first), places_, place);
  const size_t first = rows.first + static_cast<size_t>(mine.begin);
  const size_t last = first + static_cast<size_t>(mine.count);
  Tensor images, labels;
  GatherRows(set_, order_, first, last, &images, &labels);
  out->fields = {std::move(images), std::move(labels)};
  out->step = static_cast<int64_t>(step);
  out->decoded_here = true;
  slices_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::string PlaceGatheredBatches::Describe() const {
  return StrCat("batches of ", set_.size(), " examples in memory, gathered by ", places_,
                " place(s)");
}

}  // namespace rill
