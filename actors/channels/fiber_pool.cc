#include "actors/channels/fiber_pool.h"

#include <atomic>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/protected_fixedsize_stack.hpp>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "rill/error.h"
#include "rill/log.h"

// AddressSanitizer cannot follow Boost.Context's stack switches (Debian's
// Boost is built without its sanitizer annotations): an exception thrown on a
// fiber's stack is reported as a stack-use-after-scope. Under ASan each
// "fiber" is a thread of its own; the channels work the same from threads.
#if defined(__SANITIZE_ADDRESS__)
#define RILL_FIBERS_AS_THREADS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RILL_FIBERS_AS_THREADS 1
#endif
#endif

namespace rill {

// One pool thread: its queue of functions to start, and its live fibers.
struct FiberPool::Worker {
  std::thread thread;
  std::mutex mutex;
  boost::fibers::condition_variable_any cv;  // work arrived, a fiber ended, or stop
  std::deque<std::function<void()>> queue;   // guarded by mutex
  bool stopping = false;                     // guarded by mutex
  int live = 0;                              // fibers started here and not ended; guarded by mutex
  std::chrono::milliseconds grace{0};
};

FiberPool::FiberPool(Options options) : options_(options) {
  RILL_CHECK(options.threads >= 1, kInvalidArgument, "a fiber pool needs at least one thread, got ",
             options.threads);
  for (int i = 0; i < options.threads; ++i) {
    auto worker = std::make_shared<Worker>();
    worker->grace = options.shutdown_grace;
    worker->thread = std::thread([worker, stack = options.stack_bytes] { Loop(worker, stack); });
    workers_.push_back(std::move(worker));
  }
}

FiberPool::~FiberPool() { Shutdown(); }

void FiberPool::Spawn(std::function<void()> fn) {
  RILL_CHECK(!shut_down_.load(std::memory_order_acquire), kCancelled,
             "the fiber pool is shut down: nothing more can be spawned");
  Worker& w = *workers_[next_.fetch_add(1, std::memory_order_relaxed) % workers_.size()];
  std::lock_guard<std::mutex> lock(w.mutex);
  RILL_CHECK(!w.stopping, kCancelled, "the fiber pool is shut down: nothing more can be spawned");
  w.queue.push_back(std::move(fn));
  w.cv.notify_all();
}

int FiberPool::live_fibers() const {
  int live = 0;
  for (const auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->mutex);
    live += w->live + static_cast<int>(w->queue.size());
  }
  return live;
}

// The thread's main fiber: starts a fiber for each function queued, and after
// a stop waits (at most the grace period) for its fibers to end.
void FiberPool::Loop(const std::shared_ptr<Worker>& worker, size_t stack_bytes) {
  Worker& w = *worker;
  std::unique_lock<std::mutex> lock(w.mutex);
  for (;;) {
    w.cv.wait(lock, [&w] { return !w.queue.empty() || w.stopping; });
    if (!w.queue.empty()) {
      std::function<void()> fn = std::move(w.queue.front());
      w.queue.pop_front();
      ++w.live;
      lock.unlock();
      auto body = [worker, fn = std::move(fn)] {
        try {
          fn();
        } catch (const std::exception& e) {
          Log(LogLevel::kError, "a fiber ended with an exception: ", e.what());
        } catch (...) {
          Log(LogLevel::kError, "a fiber ended with an unknown exception");
        }
        std::lock_guard<std::mutex> guard(worker->mutex);
        --worker->live;
        worker->cv.notify_all();
      };
#ifdef RILL_FIBERS_AS_THREADS
      (void)stack_bytes;
      std::thread(std::move(body)).detach();
#else
      boost::fibers::fiber(std::allocator_arg,
                           boost::fibers::protected_fixedsize_stack(stack_bytes), std::move(body))
          .detach();
#endif
      lock.lock();
      continue;
    }
    // Stopping, nothing queued: wait for this thread's fibers.
    if (!w.cv.wait_for(lock, w.grace, [&w] { return w.live == 0; })) {
      Log(LogLevel::kWarning, w.live, " fiber(s) still parked ", w.grace.count(),
          " ms after the fiber pool was shut down (waiting on a channel nobody closes?); "
          "leaving them to their thread");
      w.cv.wait(lock, [&w] { return w.live == 0; });
    }
    return;
  }
}

void FiberPool::Shutdown() {
  if (shut_down_.exchange(true, std::memory_order_acq_rel)) return;
  for (auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->mutex);
    w->stopping = true;
    w->cv.notify_all();
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.shutdown_grace;
  for (auto& w : workers_) {
    // Join when the fibers end in time; otherwise the thread keeps waiting on its own.
    bool ended = false;
    {
      std::unique_lock<std::mutex> lock(w->mutex);
      ended = w->cv.wait_until(lock, deadline, [&w] { return w->live == 0 && w->queue.empty(); });
    }
    if (ended) {
      w->thread.join();
    } else {
      w->thread.detach();
    }
  }
}

}  // namespace rill
