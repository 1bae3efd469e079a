// FiberPool: the threads that run Rill's fibers (Boost.Fiber) — everything
// that waits on channels and wait-groups without being an actor: go blocks,
// ops that may block (select, loops whose bodies receive), and functions a
// user spawns. Each thread runs its own round-robin scheduler; Spawn hands a
// function to the threads in turn and it becomes a fiber there. A fiber that
// parks on a channel lets the other fibers of its thread run; a thread with
// nothing to run sleeps until a fiber of its own is woken or work arrives.
//
// A Runtime owns one pool (runtime.h). Shutdown stops taking work and waits
// for the fibers to finish; fibers still parked after the grace period are
// reported to the log sink (rill/log.h) and left to their thread, which is
// detached.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace rill {

class FiberPool {
 public:
  struct Options {
    int threads = 1;
    size_t stack_bytes = 1 << 20;  // per fiber, with a guard page below it
    std::chrono::milliseconds shutdown_grace{10000};
  };

  explicit FiberPool(Options options);
  FiberPool() : FiberPool(Options{}) {}
  ~FiberPool();
  FiberPool(const FiberPool&) = delete;
  FiberPool& operator=(const FiberPool&) = delete;

  // Runs `fn` on a fiber of one of the threads. An exception escaping `fn` is
  // reported to the log sink (Rill's own fibers catch theirs). Throws
  // kCancelled after Shutdown.
  void Spawn(std::function<void()> fn);

  // Fibers spawned and not yet finished.
  int live_fibers() const;
  int threads() const { return static_cast<int>(workers_.size()); }

  void Shutdown();

 private:
  struct Worker;
  static void Loop(const std::shared_ptr<Worker>& worker, size_t stack_bytes);

  Options options_;
  std::vector<std::shared_ptr<Worker>> workers_;
  std::atomic<unsigned> next_{0};
  std::atomic<bool> shut_down_{false};
};

}  // namespace rill
