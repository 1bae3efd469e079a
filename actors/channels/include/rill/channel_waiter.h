// ChannelWaiter: one parked channel operation — a send, a receive, or a
// select over several cases — sitting in the queues of the channels it waits
// on. Whoever completes it first claims it (an atomic flag): a select fires
// exactly one case, and a timed wait either times out or completes, never
// both. A waiter either parks its caller (Wait: a fiber yields to the other
// fibers of its thread, a plain thread sleeps) or, for code that must never
// block such as an actor, runs a callback on the thread that completes it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>

#include "rill/fiber_condition.h"

namespace rill {

enum class ChannelStatus {
  kOk,          // the value went through
  kClosed,      // the channel is closed (and, for a receive, drained)
  kTimeout,     // a timed operation ran out of time
  kWouldBlock,  // a try operation found the channel not ready
};

const char* ChannelStatusName(ChannelStatus status);

class ChannelWaiter {
 public:
  // `which` is the case that fired (0 for a plain send or receive).
  using Callback = std::function<void(int which, ChannelStatus status)>;

  ChannelWaiter() = default;
  explicit ChannelWaiter(Callback callback) : callback_(std::move(callback)) {}
  ChannelWaiter(const ChannelWaiter&) = delete;
  ChannelWaiter& operator=(const ChannelWaiter&) = delete;

  // Takes the right to complete this waiter; false when someone else has it.
  bool Claim() {
    bool expected = false;
    return claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
  }

  // After a successful Claim: records the outcome and wakes the owner (or
  // runs the callback, on the calling thread).
  void Complete(int which, ChannelStatus status) {
    if (callback_) {
      callback_(which, status);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      which_ = which;
      status_ = status;
      done_ = true;
    }
    cv_.NotifyAll();
  }

  // Parks the calling fiber or thread until Complete, or until `deadline`.
  // Returns whether it completed.
  bool Wait(const std::optional<SteadyTime>& deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!deadline) {
      cv_.Wait(lock, [this] { return done_; });
      return true;
    }
    return cv_.WaitUntil(lock, *deadline, [this] { return done_; });
  }

  // The outcome; read after Wait returned true.
  int which() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return which_;
  }
  ChannelStatus status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }

 private:
  std::atomic<bool> claimed_{false};
  // A std::mutex (not a fiber mutex) guards the outcome so that thread
  // sanitizers see the hand-over; the condition variable is fiber-aware.
  mutable std::mutex mutex_;
  FiberCondition cv_;
  bool done_ = false;
  int which_ = -1;
  ChannelStatus status_ = ChannelStatus::kOk;
  Callback callback_;
};

}  // namespace rill
