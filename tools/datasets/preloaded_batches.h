// PreloadedBatches: the batches of an epoch over an in-memory ImageDataset,
// gathered one step ahead on a thread of its own, so that a driver feeding
// them finds each batch ready when its step starts, with nothing gathered or
// allocated on its critical path.
//
// Batches are written into a ring of `prefetch + 2` recycled tensor pairs: a
// batch handed out stays valid while the step that reads it runs and while the
// executor's scope holds it as the fed variable until the next step's feed
// replaces it, so the slot refilled next is always one that nothing reads any
// more; its buffer is then reused (Tensor::Allocate keeps an unshared buffer).
// A caller that keeps a batch longer only costs an allocation, never a wrong
// value: a still-shared buffer is not written but replaced.
//
//   PreloadedBatches batches(train, {.prefetch = 2});
//   batches.StartEpoch(order, ranges);  // rows order[begin, end) per step
//   PreloadedBatches::Batch b;
//   while (batches.Next(&b)) exe.Run({{"image", b.images}, {"label", b.labels}}, ...);
//
// Threads: one driver calls StartEpoch and Next; the gathering thread is
// internal. Destruction stops it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "rill/tensor.h"
#include "tools/datasets/fashion_mnist.h"

namespace rill {

// Copies the rows order[begin, end) of `set` into `images` and `labels`,
// reusing their buffers when they are large enough and not shared.
void GatherRows(const ImageDataset& set, const std::vector<int64_t>& order, size_t begin,
                size_t end, Tensor* images, Tensor* labels);

class PreloadedBatches {
 public:
  struct Options {
    // Batches gathered ahead of the one the driver takes; 0: each is
    // gathered when Next asks for it (still on the gathering thread).
    int prefetch = 2;
    // Added to the gathering thread's nice value (as InputPipeline's decode_nice).
    int gather_nice = 5;
  };
  struct Batch {
    Tensor images;  // float32 [rows, width]
    Tensor labels;  // int64 [rows, 1]
  };
  // Counters since construction, as InputPipeline counts its slices.
  struct Counters {
    int64_t batches = 0;  // batches taken
    int64_t ready = 0;    // ... that were gathered before Next asked for them
    int64_t waited = 0;   // ... that Next had to wait for
    int64_t wait_ns = 0;  // total time Next waited
  };
  // Rows [begin, end) of an epoch's example order: one step's batch.
  using Range = std::pair<size_t, size_t>;

  // `set` must outlive this object.
  PreloadedBatches(const ImageDataset& set, Options options);
  ~PreloadedBatches();
  PreloadedBatches(const PreloadedBatches&) = delete;
  PreloadedBatches& operator=(const PreloadedBatches&) = delete;

  // Ends the running epoch, if any, and starts gathering a new one: step i is
  // rows order[ranges[i].first, ranges[i].second) of the set.
  void StartEpoch(std::vector<int64_t> order, std::vector<Range> ranges);
  // The epoch's next batch, waiting until it is gathered; false once every
  // step's batch was taken. Rethrows what the gathering thread threw.
  bool Next(Batch* out);
  Counters counters() const;

 private:
  void GatherLoop();

  const ImageDataset& set_;
  const Options options_;
  mutable std::mutex mutex_;
  std::condition_variable gathered_;  // a batch is ready, the gatherer is idle, or it failed
  std::condition_variable wanted_;    // the driver took a batch, or an epoch starts or ends
  std::vector<Batch> ring_;
  // Guarded by mutex_: the epoch's plan, how far the gatherer and the driver are.
  std::vector<int64_t> order_;
  std::vector<Range> ranges_;
  size_t gathered_count_ = 0;
  bool busy_ = false;     // the gatherer is writing a slot (without the lock)
  bool waiting_ = false;  // Next waits for the batch taken_
  size_t taken_ = 0;
  bool stopping_ = false;
  std::exception_ptr failure_;
  Counters counters_;
  std::thread gatherer_;
};

}  // namespace rill
