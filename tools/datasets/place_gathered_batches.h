// PlaceGatheredBatches: the batches of an epoch over an in-memory
// ImageDataset, taken by a `read` op on each place, which gathers its own
// slice of the step's rows on its own thread. There is no gathering thread:
// this is the arrangement for places that take every core, where such a
// thread could only run by preempting one place while the others wait for it
// at the next gradient merge (InputPipeline's decode_threads 0 is the same
// choice for decoded batches). PreloadedBatches is the other arrangement: a
// thread of its own gathers whole batches ahead for a driver that feeds them.
//
//   PlaceGatheredBatches batches(train, /*places=*/2);
//   scope.Var("reader")->set_object(batches_ptr);  // read by the program's read op
//   batches.StartEpoch(order, ranges);               // rows order[begin, end) per step
//
// Threads: StartEpoch between runs (no read in flight); Next and TryNext from
// the places' threads, one reader per place at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rill/input_pipeline.h"
#include "tools/datasets/fashion_mnist.h"
#include "tools/datasets/preloaded_batches.h"

namespace rill {

class PlaceGatheredBatches : public BatchReader {
 public:
  // `set` must outlive this object.
  PlaceGatheredBatches(const ImageDataset& set, int places);

  // Starts a new epoch: step i is rows order[ranges[i].first, ranges[i].second)
  // of the set, split over the places as SplitBatch splits a fed batch.
  void StartEpoch(std::vector<int64_t> order, std::vector<PreloadedBatches::Range> ranges);
  // Both gather at once: a slice is never waited for.
  bool Next(int place, PipelineBatch* out) override;
  bool TryNext(int place, PipelineBatch* out, bool* ended) override;
  std::string Describe() const override;
  // Slices taken since construction.
  int64_t slices() const { return slices_.load(std::memory_order_relaxed); }

 private:
  const ImageDataset& set_;
  const int places_;
  mutable std::mutex mutex_;  // guards the epoch's plan and the places' positions
  std::vector<int64_t> order_;
  std::vector<PreloadedBatches::Range> ranges_;
  std::vector<size_t> next_step_;  // per place
  std::atomic<int64_t> slices_{0};
};

}  // namespace rill
