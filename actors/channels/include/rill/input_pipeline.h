// InputPipeline: streams a dataset as batches. Each epoch it shuffles the
// example order with a seed, decodes batches on its own threads (a
// BatchSource turns example indices into tensors), splits each batch along
// dim 0 over the places, and delivers the slices in order into one bounded
// channel per place: with prefetch 2, the next batch is already in place when
// a step starts (double buffering). The end of an epoch is the channels
// closing. A `read` op in the program takes a place's next slice
// (read_op.cc); a plain loop can call Next().
//
// With decode_threads 0 there are no decode threads: each place decodes its
// own slice in Next/TryNext, on the thread that asks (a place's read op).
// That is the arrangement for places that take every core: a decode thread
// could then only run by preempting one place, which the others wait for at
// the next gradient merge, where slices decoded by the places themselves
// cost each place the same.
//
//   InputPipeline pipeline(source, {.batch = 64, .places = 1, .seed = 0});
//   pipeline.StartEpoch(1);
//   PipelineBatch b;
//   while (pipeline.Next(0, &b)) { ... b.fields ... }
//
// The order is the one `rill train` uses for preloaded data: example i of the
// epoch is order[i] after std::shuffle with mt19937_64(seed * 1000003 + epoch).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rill/channel.h"
#include "rill/scope.h"
#include "rill/tensor.h"

namespace rill {

// Where examples come from. Decode is called from several threads at once.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Examples per epoch.
  virtual int64_t size() const = 0;
  // Names of what a batch holds (the variables it feeds), in order.
  virtual std::vector<std::string> fields() const = 0;
  // The examples `indices`, one tensor per field, each with indices.size() rows.
  virtual std::vector<Tensor> Decode(const std::vector<int64_t>& indices) const = 0;
};

// One place's slice of a batch.
struct PipelineBatch {
  std::vector<Tensor> fields;
  int64_t step = 0;  // index of the batch in its epoch
  // Decoded by the thread that took it (no decode threads): its buffers are
  // already in this core's cache, so a reader may keep them instead of copying.
  bool decoded_here = false;
};

// What a `read` op takes its place's slices from (read_op.cc): an
// InputPipeline, or a reader of the trainer's own (PlaceGatheredBatches in
// tools/datasets gathers slices of a dataset held in memory).
class BatchReader : public VarObject {
 public:
  // The next slice for `place`, waiting for it; false once the epoch is over.
  virtual bool Next(int place, PipelineBatch* out) = 0;
  // Non-blocking: true with a slice, or with *ended set at the end of the epoch.
  virtual bool TryNext(int place, PipelineBatch* out, bool* ended) = 0;
};

class InputPipeline : public BatchReader {
 public:
  struct Options {
    int64_t batch = 64;
    int places = 1;
    uint64_t seed = 0;
    bool shuffle = true;
    int decode_threads = 1;    // 0: each place decodes its slice when it asks for it
    int prefetch = 2;          // slices buffered per place (unused without decode threads)
    int64_t max_batches = -1;  // per epoch; -1: all
    // Added to the decode threads' nice value: they run in the gaps the
    // threads computing leave (a place's first kernel then starts when its
    // batch is taken, not after the next batch's decode). 0: same priority.
    int decode_nice = 5;
  };
  // Counters since construction.
  struct Counters {
    int64_t batches = 0;  // slices taken by readers
    int64_t ready = 0;    // ... that were already waiting in their channel
    int64_t waited = 0;   // ... that a reader had to wait for
    int64_t wait_ns = 0;  // total time readers waited
    int64_t decoded = 0;  // batches decoded
  };

  InputPipeline(std::shared_ptr<const BatchSource> source, Options options);
  ~InputPipeline() override;
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  std::string Describe() const override;
  const Options& options() const { return options_; }
  const BatchSource& source() const { return *source_; }
  // Batches per epoch.
  int64_t steps_per_epoch() const;

  // Stops the previous epoch (if still running) and starts epoch `epoch`.
  void StartEpoch(int epoch);
  bool Next(int place, PipelineBatch* out) override;
  bool TryNext(int place, PipelineBatch* out, bool* ended) override;
  // The place's channel of this epoch (for callers that wait their own way).
  std::shared_ptr<Channel<PipelineBatch>> channel(int place) const;
  // Closes the channels and joins the decode threads.
  void Stop();

  Counters counters() const;
  // For readers that waited their own way: account one slice.
  void CountTaken(bool was_ready, int64_t wait_ns);

 private:
  void DecodeLoop();
  // Without decode threads: decodes `place`'s slice of its next step here.
  bool DecodeInline(int place, PipelineBatch* out, bool* ended);

  std::shared_ptr<const BatchSource> source_;
  Options options_;
  mutable std::mutex mutex_;  // guards the epoch's state below
  std::vector<std::shared_ptr<Channel<PipelineBatch>>> channels_;
  std::vector<int64_t> order_;
  int64_t steps_ = 0;
  // Guarded by mutex_: without decode threads, the step each place takes next.
  std::vector<int64_t> next_inline_;
  std::atomic<int64_t> next_decode_{0};  // the batch the next free decoder takes
  int64_t next_deliver_ = 0;             // guarded by mutex_: the batch delivered next
  std::condition_variable turn_;         // a decoder's batch may be delivered
  bool stopping_ = false;                // guarded by mutex_
  std::vector<std::thread> decoders_;
  std::atomic<int64_t> batches_{0}, ready_{0}, waited_{0}, wait_ns_{0}, decoded_{0};
};

}  // namespace rill
