// ParallelFor: a kernel's loop over independent parts, shared with the
// executor's idle threads. The kernel's own thread takes parts too, so the
// loop never waits for a thread to become free: it waits only for parts that
// another thread is running at that moment. Without lent threads (the
// reference executor, one thread) the parts run here in order.
//
// The partition must not depend on how many threads help (take it from the
// problem's size), and parts must write disjoint outputs: then every
// executor computes the same bits.
//
//   ParallelFor(images, [&](int64_t i) { ConvolveImage(i); });
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

namespace rill {

// One ParallelFor's parts, which threads take in order by number.
class ParallelJob {
 public:
  ParallelJob(int64_t parts, const std::function<void(int64_t)>& body)
      : parts_(parts), body_(&body) {}
  ParallelJob(const ParallelJob&) = delete;
  ParallelJob& operator=(const ParallelJob&) = delete;

  // Runs parts nobody has taken yet until none is left. Whether it ran any.
  bool RunParts();
  // Whether parts are left to take (a hint: another thread may take them first).
  bool HasParts() const { return next_.load(std::memory_order_relaxed) < parts_; }
  // Waits until every part taken so far has ended.
  void WaitForTakenParts() const;
  // The first exception a part threw (the parts after it are skipped).
  std::exception_ptr error() const;

 private:
  const int64_t parts_;
  // The caller's body: read only for a part taken below parts_, and the caller
  // returns only after those have ended.
  const std::function<void(int64_t)>* const body_;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> ended_{0};
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mutex_;
  std::exception_ptr error_;  // guarded by error_mutex_
};

// What an executor lends its kernels: threads with nothing else to do take
// the parts of the jobs offered.
class ParallelHelpers {
 public:
  virtual ~ParallelHelpers() = default;
  // Offers `job` to other threads until Withdraw.
  virtual void Offer(const std::shared_ptr<ParallelJob>& job) = 0;
  virtual void Withdraw(const ParallelJob* job) = 0;
};

// Runs body(i) once for each i in [0, parts), here and on the threads the
// current executor lends; returns when all have ended and rethrows the first
// exception a part threw.
void ParallelFor(int64_t parts, const std::function<void(int64_t)>& body);

// The helpers of the kernels this thread runs while it lives (an executor
// sets it around a kernel); null: none.
class ScopedParallelHelpers {
 public:
  explicit ScopedParallelHelpers(ParallelHelpers* helpers);
  ~ScopedParallelHelpers();
  ScopedParallelHelpers(const ScopedParallelHelpers&) = delete;
  ScopedParallelHelpers& operator=(const ScopedParallelHelpers&) = delete;

 private:
  ParallelHelpers* const previous_;
};

// Values of elementwise or per-row work worth a part of their own (a few µs
// of work, against the few hundred ns a part costs to hand over).
inline constexpr int64_t kMinValuesPerPart = 16384;

// `count` items cut into runs of at least `min_items` (one run when fewer):
// how many, and where run `part` begins and ends. It depends on the sizes only.
inline int64_t PartsOf(int64_t count, int64_t min_items) {
  return count / min_items > 1 ? count / min_items : 1;
}
inline int64_t PartBegin(int64_t count, int64_t parts, int64_t part) {
  return part * count / parts;
}

// ParallelFor over runs [begin, end) of [0, count), each of at least
// `min_items` and beginning at a multiple of `align` (a kernel's vector
// blocks then fall where they fall in one pass over all of it).
void ParallelRanges(int64_t count, int64_t min_items, int64_t align,
                    const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace rill
