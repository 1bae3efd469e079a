#include "actors/executor/idle_helpers.h"

#include <algorithm>

namespace rill {

void IdleHelpers::Offer(const std::shared_ptr<ParallelJob>& job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(job);
  }
  offered_.fetch_add(1, std::memory_order_seq_cst);
  wake_idle_();
}

void IdleHelpers::Withdraw(const ParallelJob* job) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(jobs_.begin(), jobs_.end(),
                         [job](const std::shared_ptr<ParallelJob>& j) { return j.get() == job; });
  if (it == jobs_.end()) return;
  jobs_.erase(it);
  offered_.fetch_sub(1, std::memory_order_relaxed);
}

std::shared_ptr<ParallelJob> IdleHelpers::JobWithParts() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& job : jobs_) {
    if (job->HasParts()) return job;
  }
  return nullptr;
}

bool IdleHelpers::HasOfferedParts() {
  return offered_.load(std::memory_order_seq_cst) > 0 && JobWithParts() != nullptr;
}

bool IdleHelpers::Help() {
  if (offered_.load(std::memory_order_acquire) == 0) return false;
  const std::shared_ptr<ParallelJob> job = JobWithParts();
  return job != nullptr && job->RunParts();
}

}  // namespace rill
