#include "tools/datasets/preloaded_batches.h"

#include <algorithm>
#include <chrono>

#include "rill/error.h"
#include "runtime/base/thread_priority.h"

namespace rill {

void GatherRows(const ImageDataset& set, const std::vector<int64_t>& order, size_t begin,
                size_t end, Tensor* images, Tensor* labels) {
  const int64_t n = static_cast<int64_t>(end - begin);
  const int64_t width = set.images.dim(1);
  float* x = images->Allocate<float>({n, width});
  int64_t* y = labels->Allocate<int64_t>({n, 1});
  const float* src = set.images.data<float>();
  const int64_t* src_labels = set.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = order[begin + static_cast<size_t>(i)];
    std::copy(src + row * width, src + (row + 1) * width, x + i * width);
    y[i] = src_labels[row];
  }
}

PreloadedBatches::PreloadedBatches(const ImageDataset& set, Options options)
    : set_(set), options_(options) {
  RILL_CHECK(options_.prefetch >= 0, kInvalidArgument,
             "PreloadedBatches: prefetch must be at least 0, got ", options_.prefetch);
  // The batch the driver's step reads, the one the scope may still hold from
  // the step before, and `prefetch` gathered ahead.
  ring_.resize(static_cast<size_t>(options_.prefetch) + 2);
  gatherer_ = std::thread([this] { GatherLoop(); });
}

PreloadedBatches::~PreloadedBatches() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wanted_.notify_all();
  gatherer_.join();
}

void PreloadedBatches::StartEpoch(std::vector<int64_t> order, std::vector<Range> ranges) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    RILL_CHECK(ranges[i].first <= ranges[i].second && ranges[i].second <= order.size(), kOutOfRange,
               "PreloadedBatches: step ", i, " takes rows [", ranges[i].first, ", ",
               ranges[i].second, ") of an order of ", order.size());
  }
  for (int64_t row : order) {
    RILL_CHECK(row >= 0 && row < set_.size(), kOutOfRange, "PreloadedBatches: example ", row,
               " is not in a set of ", set_.size());
  }
  std::unique_lock<std::mutex> lock(mutex_);
  // The gatherer reads the plan and writes a slot without the lock: wait
  // until it is between batches.
  gathered_.wait(lock, [&] { return !busy_; });
  order_ = std::move(order);
  ranges_ = std::move(ranges);
  gathered_count_ = 0;
  taken_ = 0;
  lock.unlock();
  wanted_.notify_all();
}

bool PreloadedBatches::Next(Batch* out) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failure_) std::rethrow_exception(failure_);
  if (taken_ >= ranges_.size()) return false;
  const bool ready = gathered_count_ > taken_;
  if (!ready) {
    // The gatherer takes this batch now if it is not on it already (with
    // prefetch 0 it gathers only what is asked for); it stops only when
    // destroyed or failing.
    const auto began = std::chrono::steady_clock::now();
    waiting_ = true;
    wanted_.notify_one();
    gathered_.wait(lock, [&] { return gathered_count_ > taken_ || failure_; });
    waiting_ = false;
    counters_.wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - began)
                             .count();
    if (failure_) std::rethrow_exception(failure_);
  }
  *out = ring_[taken_ % ring_.size()];
  ++taken_;
  ++counters_.batches;
  ++(ready ? counters_.ready : counters_.waited);
  lock.unlock();
  wanted_.notify_one();
  return true;
}

PreloadedBatches::Counters PreloadedBatches::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void PreloadedBatches::GatherLoop() {
  LowerCurrentThreadPriority(options_.gather_nice);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wanted_.wait(lock, [&] {
      const size_t ahead = static_cast<size_t>(options_.prefetch) + (waiting_ ? 1 : 0);
      return stopping_ || (gathered_count_ < ranges_.size() && gathered_count_ < taken_ + ahead);
    });
    if (stopping_) return;
    const size_t step = gathered_count_;
    busy_ = true;
    lock.unlock();
    std::exception_ptr failure;
    try {
      Batch* slot = &ring_[step % ring_.size()];
      GatherRows(set_, order_, ranges_[step].first, ranges_[step].second, &slot->images,
                 &slot->labels);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (failure) {
      failure_ = failure;
      gathered_.notify_all();
      return;
    }
    ++gathered_count_;
    gathered_.notify_all();
  }
}

}  // namespace rill
