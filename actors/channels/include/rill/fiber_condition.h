// FiberCondition: a condition variable under a std::mutex that parks a fiber
// without blocking its thread (the other fibers of the thread run on) and a
// plain thread as usual. Channels, select and wait-groups wait on it, so that
// the same code serves go blocks on the fiber pool and plain threads.
//
// Its Boost.Fiber condition variable lives inside the object (no allocation),
// out of this header's sight: public headers name no Boost type.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>

namespace rill {

using SteadyTime = std::chrono::steady_clock::time_point;

class FiberCondition {
 public:
  FiberCondition();
  ~FiberCondition();
  FiberCondition(const FiberCondition&) = delete;
  FiberCondition& operator=(const FiberCondition&) = delete;

  void NotifyAll();
  // Waits with `lock` (held) released until notified (or spuriously).
  void Wait(std::unique_lock<std::mutex>& lock);
  // As Wait, giving up at `deadline`; false when it timed out.
  bool WaitUntil(std::unique_lock<std::mutex>& lock, SteadyTime deadline);

  template <class Predicate>
  void Wait(std::unique_lock<std::mutex>& lock, Predicate done) {
    while (!done()) Wait(lock);
  }
  // Returns done() as it was when the wait ended.
  template <class Predicate>
  bool WaitUntil(std::unique_lock<std::mutex>& lock, SteadyTime deadline, Predicate done) {
    while (!done()) {
      if (!WaitUntil(lock, deadline)) return done();
    }
    return true;
  }

 private:
  // Room for boost::fibers::condition_variable_any (checked where it is built).
  static constexpr size_t kSize = 64;
  alignas(std::max_align_t) unsigned char storage_[kSize];
};

}  // namespace rill
