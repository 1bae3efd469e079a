#include "rill/wait_group.h"

#include "rill/error.h"

namespace rill {

void WaitGroup::Add(int n) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RILL_CHECK(count_ + n >= 0, kInternal, "WaitGroup count would go below zero (", count_, " + ",
               n, ")");
    count_ += n;
    if (count_ == 0) {
      ready.swap(callbacks_);
      // Under the lock: a waiter may destroy the group as soon as it can relock.
      cv_.NotifyAll();
    }
  }
  for (auto& callback : ready) callback();
}

void WaitGroup::Done() { Add(-1); }

void WaitGroup::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.Wait(lock, [this] { return count_ == 0; });
}

void WaitGroup::AsyncWait(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_ != 0) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

int WaitGroup::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_;
}

}  // namespace rill
