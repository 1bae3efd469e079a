#include "rill/parallel_for.h"

#include <algorithm>
#include <thread>

#include "runtime/base/cpu_relax.h"

namespace rill {
namespace {

thread_local ParallelHelpers* current_helpers = nullptr;

}  // namespace

bool ParallelJob::RunParts() {
  bool ran = false;
  while (true) {
    const int64_t part = next_.fetch_add(1, std::memory_order_relaxed);
    if (part >= parts_) return ran;
    ran = true;
    if (!failed_.load(std::memory_order_relaxed)) {
      try {
        (*body_)(part);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    // Release: the part's writes are seen by whoever sees it ended.
    ended_.fetch_add(1, std::memory_order_release);
  }
}

void ParallelJob::WaitForTakenParts() const {
  // A part still running was taken by a thread that is running it now, so
  // this wait ends within one part's time.
  int64_t spins = 0;
  while (true) {
    const int64_t taken = std::min(next_.load(std::memory_order_acquire), parts_);
    if (ended_.load(std::memory_order_acquire) >= taken) return;
    if (++spins < 4096) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

std::exception_ptr ParallelJob::error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return error_;
}

void ParallelFor(int64_t parts, const std::function<void(int64_t)>& body) {
  ParallelHelpers* helpers = current_helpers;
  if (helpers == nullptr || parts <= 1) {
    for (int64_t i = 0; i < parts; ++i) body(i);
    return;
  }
  auto job = std::make_shared<ParallelJob>(parts, body);
  helpers->Offer(job);
  job->RunParts();
  helpers->Withdraw(job.get());
  job->WaitForTakenParts();
  if (std::exception_ptr error = job->error()) std::rethrow_exception(error);
}

void ParallelRanges(int64_t count, int64_t min_items, int64_t align,
                    const std::function<void(int64_t, int64_t)>& body) {
  if (count <= 0) return;
  const int64_t units = (count + align - 1) / align;
  const int64_t parts = PartsOf(units, std::max<int64_t>(1, min_items / align));
  ParallelFor(parts, [&](int64_t part) {
    body(PartBegin(units, parts, part) * align,
         std::min(count, PartBegin(units, parts, part + 1) * align));
  });
}

ScopedParallelHelpers::ScopedParallelHelpers(ParallelHelpers* helpers)
    : previous_(current_helpers) {
  current_helpers = helpers;
}

ScopedParallelHelpers::~ScopedParallelHelpers() { current_helpers = previous_; }

}  // namespace rill
