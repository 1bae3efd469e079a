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

#include <boost/fiber/condition_variable.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <vector>

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
    return cv_.wait_for(lock, timeout, [this] { return count_ == 0; });
  }
  void AsyncWait(std::function<void()> callback);
  int count() const;

 private:
  mutable std::mutex mutex_;
  boost::fibers::condition_variable_any cv_;
  int count_ = 0;
  std::vector<std::function<void()>> callbacks_;  // run when the count reaches zero
};

}  // namespace rill
