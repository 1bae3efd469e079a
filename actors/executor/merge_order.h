// MergeOrder: one place's gradient merges run in the merges' global order
// (GradientMerge::order), whatever order their barriers open in. A chunk that
// arrives before its turn waits here; starting a chunk hands over the next
// one if it was waiting. Every place issuing merges in the same order is what
// keeps two places (or, across processes, two ranks) from each waiting for a
// merge the other has not started. One per place and iteration slot;
// thread-safe.
#pragma once

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace rill {

struct Task;

class MergeOrder {
 public:
  explicit MergeOrder(size_t merges) : waiting_(merges, nullptr) {}

  // A new iteration: the first merge is next.
  void Reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = 0;
    std::fill(waiting_.begin(), waiting_.end(), nullptr);
  }
  // Merge `order`'s chunk is ready: true when it may run now, else it waits
  // until the merge before it starts.
  bool Arrive(int order, Task* chunk) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (order == next_) return true;
    waiting_[static_cast<size_t>(order)] = chunk;
    return false;
  }
  // Merge `order`'s chunk starts: returns the next merge's chunk when it
  // arrived early and may now run (else null).
  Task* Start(int order) {
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = order + 1;
    Task* next = nullptr;
    if (next_ < static_cast<int>(waiting_.size())) std::swap(next, waiting_[next_]);
    return next;
  }

 private:
  std::mutex mutex_;
  int next_ = 0;                // the merge this place runs next
  std::vector<Task*> waiting_;  // by order: chunks that came before their turn
};

}  // namespace rill
