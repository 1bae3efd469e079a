// HelperThread: a thread that takes parts of the ParallelFor jobs offered to
// `helpers` until it is destroyed, as an executor's idle stream drainer does.
// For tests of kernels that cut their loops into parts: with one lent (a
// ScopedParallelHelpers on the kernel's thread), parts run on two threads.
#pragma once

#include <atomic>
#include <thread>

#include "actors/executor/idle_helpers.h"

namespace rill::testing {

class HelperThread {
 public:
  explicit HelperThread(IdleHelpers& helpers)
      : thread_([this, &helpers] {
          while (!stop_.load()) {
            if (!helpers.Help()) std::this_thread::yield();
          }
        }) {}
  ~HelperThread() {
    stop_.store(true);
    thread_.join();
  }
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace rill::testing
