// WaitGroup: waits for a set of tasks to finish, as Go's sync.WaitGroup.
//
//   WaitGroup group;
//   group.Add(n);                       // before starting the n tasks
//   ... each task calls group.Done() ...
//   group.Wait();                       // or WaitFor(timeout), or AsyncWait(callback)
//
// Wait parks the calling fiber (other fibers of its thread run on) or plain
// thread. AsyncWait never blocks: the callback runs inline when the count is
// already zero, else on the thread whose Done brings it to zero — the way for
// an actor. Done below zero is an error (kInternal), not a crash.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <vector>

#include "rill/fiber_condition.h"

namespace rill {

class WaitGroup {
 public:
  WaitGroup() = default;
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;

  void Add(int n = 1);
  void Done();
  void Wait();
  // Returns whether the count reached zero within `timeout`.
  template <class Rep, class Period>
  bool WaitFor(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    const SteadyTime deadline = std::chrono::steady_clock::now() +
                                std::chrono::ceil<std::chrono::steady_clock::duration>(timeout);
    return cv_.WaitUntil(lock, deadline, [this] { return count_ == 0; });
  }
  void AsyncWait(std::function<void()> callback);
  int count() const;

 private:
  mutable std::mutex mutex_;
  FiberCondition cv_;
  int count_ = 0;
  std::vector<std::function<void()>> callbacks_;  // run when the count reaches zero
};

}  // namespace rill
