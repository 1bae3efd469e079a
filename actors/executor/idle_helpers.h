// IdleHelpers: the actor executor's ParallelHelpers (rill/parallel_for.h).
// A kernel's ParallelFor offers its job here and wakes the streams nobody
// drains; threads that linger without tasks (a woken stream's drainer, the
// thread that called Run) take its parts. A thread helps only between tasks,
// never from inside a kernel, so no kernel waits on a thread that waits.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "rill/parallel_for.h"

namespace rill {

class IdleHelpers : public ParallelHelpers {
 public:
  // `wake_idle` wakes the streams no thread holds (called on each offer).
  explicit IdleHelpers(std::function<void()> wake_idle) : wake_idle_(std::move(wake_idle)) {}

  void Offer(const std::shared_ptr<ParallelJob>& job) override;
  void Withdraw(const ParallelJob* job) override;

  // Runs parts of an offered job; whether it ran any. Cheap when none is offered.
  bool Help();
  // Whether an offered job has parts left. A drainer asks after giving its
  // stream's claim up: an offer then may have found the claim still held and
  // woken nobody (Offer counts the job, then looks at the claims; the drainer
  // gives the claim up, then looks at the count: one of them sees the other).
  bool HasOfferedParts();

 private:
  // The first offered job with parts left, or null.
  std::shared_ptr<ParallelJob> JobWithParts();

  const std::function<void()> wake_idle_;
  std::atomic<int> offered_{0};
  std::mutex mutex_;
  std::vector<std::shared_ptr<ParallelJob>> jobs_;  // guarded by mutex_
};

}  // namespace rill
