// Channel<T>: a bounded, closable queue between fibers, threads and actors.
//
//   Channel<Tensor> ch(2);                  // capacity 2; 0 is a rendezvous
//   ch.Send(x);                             // parks while full
//   Tensor y;
//   while (ch.Recv(&y) == ChannelStatus::kOk) { ... }   // until closed and drained
//
// Send and Recv park the calling fiber (other fibers of its thread run on) or
// plain thread. TrySend/TryRecv never wait (kWouldBlock), SendFor/RecvFor
// wait at most a duration (kTimeout), and AsyncSend/AsyncRecv never block:
// they complete inline when they can, else run a callback on the thread that
// completes them — the way for an actor. Close() is idempotent: receivers
// drain what is buffered, then see kClosed; a send on a closed channel
// returns kClosed (the value is dropped), and closing releases every parked
// sender and receiver with kClosed. Parked operations complete first come,
// first served. See select.h for waiting on several channels.
//
// Thread safety: every method may be called from any thread or fiber. The
// channel must outlive the operations parked on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "rill/channel_waiter.h"

namespace rill {

class Select;

// What every channel shares, whatever its element type: its lock, and a way
// to drop a waiter that gave up (timed out, cancelled, or fired elsewhere).
class ChannelBase {
 public:
  virtual ~ChannelBase() = default;

 protected:
  friend class Select;
  friend class ChannelWaitHandle;
  // A completion found under the lock, run after it is released.
  struct PendingWake {
    std::shared_ptr<ChannelWaiter> waiter;
    int which = 0;
    ChannelStatus status = ChannelStatus::kOk;
  };
  using PendingWakes = std::vector<PendingWake>;
  static void RunWakes(PendingWakes& wakes) {
    for (auto& wake : wakes) wake.waiter->Complete(wake.which, wake.status);
  }

  virtual void RemoveWaiterLocked(const ChannelWaiter* waiter) = 0;
  void RemoveWaiter(const ChannelWaiter* waiter) {
    std::lock_guard<std::mutex> lock(mutex_);
    RemoveWaiterLocked(waiter);
  }

  mutable std::mutex mutex_;
};

// An asynchronous operation parked on a channel.
class ChannelWaitHandle {
 public:
  ChannelWaitHandle() = default;
  ChannelWaitHandle(ChannelBase* channel, std::shared_ptr<ChannelWaiter> waiter)
      : channel_(channel), waiter_(std::move(waiter)) {}
  // Whether the operation was parked (false: it completed inline).
  bool parked() const { return waiter_ != nullptr; }
  // Withdraws the operation if it has not completed: true when withdrawn (its
  // callback will never run), false when it completed or is completing.
  bool Cancel() {
    if (waiter_ == nullptr || !waiter_->Claim()) return false;
    channel_->RemoveWaiter(waiter_.get());
    return true;
  }

 private:
  ChannelBase* channel_ = nullptr;
  std::shared_ptr<ChannelWaiter> waiter_;
};

template <class T>
class Channel : public ChannelBase {
 public:
  explicit Channel(size_t capacity = 0) : capacity_(capacity) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  size_t capacity() const { return capacity_; }

  [[nodiscard]] ChannelStatus Send(T value) { return SendUntil(value, std::nullopt); }
  [[nodiscard]] ChannelStatus Recv(T* out) { return RecvUntil(out, std::nullopt); }

  // Moves from `value` only when the result is kOk.
  [[nodiscard]] ChannelStatus TrySend(T& value) {
    PendingWakes wakes;
    ChannelStatus status = ChannelStatus::kWouldBlock;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      TrySendLocked(value, &status, &wakes);
    }
    RunWakes(wakes);
    return status;
  }
  [[nodiscard]] ChannelStatus TryRecv(T* out) {
    PendingWakes wakes;
    ChannelStatus status = ChannelStatus::kWouldBlock;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      TryRecvLocked(out, &status, &wakes);
    }
    RunWakes(wakes);
    return status;
  }

  template <class Rep, class Period>
  [[nodiscard]] ChannelStatus SendFor(T& value, std::chrono::duration<Rep, Period> timeout) {
    return SendUntil(value, std::chrono::steady_clock::now() + timeout);
  }
  template <class Rep, class Period>
  [[nodiscard]] ChannelStatus RecvFor(T* out, std::chrono::duration<Rep, Period> timeout) {
    return RecvUntil(out, std::chrono::steady_clock::now() + timeout);
  }

  // Never blocks: `done(status, value)` runs exactly once, inline when the
  // channel is ready, else on the thread that completes the receive. The
  // handle can withdraw a parked receive.
  ChannelWaitHandle AsyncRecv(std::function<void(ChannelStatus, T)> done) {
    auto state = std::make_shared<T>();
    std::shared_ptr<ChannelWaiter> waiter;
    PendingWakes wakes;
    ChannelStatus status = ChannelStatus::kWouldBlock;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!TryRecvLocked(state.get(), &status, &wakes)) {
        waiter = std::make_shared<ChannelWaiter>(
            [state, done](int, ChannelStatus s) { done(s, std::move(*state)); });
        receivers_.push_back({waiter, 0, state.get()});
      }
    }
    RunWakes(wakes);
    if (waiter == nullptr) {
      done(status, std::move(*state));
      return {};
    }
    return ChannelWaitHandle(this, std::move(waiter));
  }
  // Never blocks: `done(status)` runs exactly once (kClosed: the value was dropped).
  ChannelWaitHandle AsyncSend(T value, std::function<void(ChannelStatus)> done) {
    auto state = std::make_shared<T>(std::move(value));
    std::shared_ptr<ChannelWaiter> waiter;
    PendingWakes wakes;
    ChannelStatus status = ChannelStatus::kWouldBlock;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!TrySendLocked(*state, &status, &wakes)) {
        waiter = std::make_shared<ChannelWaiter>([state, done](int, ChannelStatus s) { done(s); });
        senders_.push_back({waiter, 0, state.get()});
      }
    }
    RunWakes(wakes);
    if (waiter == nullptr) {
      done(status);
      return {};
    }
    return ChannelWaitHandle(this, std::move(waiter));
  }

  void Close() {
    PendingWakes wakes;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
      Entry entry;
      while (PopClaimed(receivers_, &entry))
        wakes.push_back({entry.waiter, entry.which, ChannelStatus::kClosed});
      while (PopClaimed(senders_, &entry))
        wakes.push_back({entry.waiter, entry.which, ChannelStatus::kClosed});
    }
    RunWakes(wakes);
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }
  // Values buffered now.
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return buffer_.size();
  }

 private:
  friend class Select;

  // A parked operation: its waiter, the case it is for, and its value (the
  // value to send, or where a received value goes).
  struct Entry {
    std::shared_ptr<ChannelWaiter> waiter;
    int which = 0;
    T* slot = nullptr;
  };

  // Pops the first entry whose waiter can still be claimed (dropping those
  // another channel or a timeout already claimed).
  static bool PopClaimed(std::deque<Entry>& queue, Entry* out) {
    while (!queue.empty()) {
      Entry entry = std::move(queue.front());
      queue.pop_front();
      if (entry.waiter->Claim()) {
        *out = std::move(entry);
        return true;
      }
    }
    return false;
  }

  // With the lock held: completes a receive if the channel is ready (a value
  // buffered, a sender parked, or closed). Returns whether it did.
  bool TryRecvLocked(T* out, ChannelStatus* status, PendingWakes* wakes) {
    Entry sender;
    if (!buffer_.empty()) {
      *out = std::move(buffer_.front());
      buffer_.pop_front();
      if (PopClaimed(senders_, &sender)) {  // room now: the first parked sender goes in
        buffer_.push_back(std::move(*sender.slot));
        wakes->push_back({sender.waiter, sender.which, ChannelStatus::kOk});
      }
      *status = ChannelStatus::kOk;
      return true;
    }
    if (PopClaimed(senders_, &sender)) {  // a rendezvous: take the value from the sender
      *out = std::move(*sender.slot);
      wakes->push_back({sender.waiter, sender.which, ChannelStatus::kOk});
      *status = ChannelStatus::kOk;
      return true;
    }
    if (closed_) {
      *status = ChannelStatus::kClosed;
      return true;
    }
    return false;
  }

  // With the lock held: completes a send if the channel is ready (a receiver
  // parked, room in the buffer, or closed). Moves from `value` only on kOk.
  bool TrySendLocked(T& value, ChannelStatus* status, PendingWakes* wakes) {
    if (closed_) {
      *status = ChannelStatus::kClosed;
      return true;
    }
    Entry receiver;
    if (PopClaimed(receivers_, &receiver)) {
      *receiver.slot = std::move(value);
      wakes->push_back({receiver.waiter, receiver.which, ChannelStatus::kOk});
      *status = ChannelStatus::kOk;
      return true;
    }
    if (buffer_.size() < capacity_) {
      buffer_.push_back(std::move(value));
      *status = ChannelStatus::kOk;
      return true;
    }
    return false;
  }

  void RemoveWaiterLocked(const ChannelWaiter* waiter) override {
    auto drop = [waiter](std::deque<Entry>& queue) {
      for (auto it = queue.begin(); it != queue.end();) {
        it = it->waiter.get() == waiter ? queue.erase(it) : it + 1;
      }
    };
    drop(receivers_);
    drop(senders_);
  }

  // Parks on `waiter` until it completes or `deadline` passes; on a timeout
  // that nobody beat, withdraws it.
  ChannelStatus Park(const std::shared_ptr<ChannelWaiter>& waiter,
                     const std::optional<SteadyTime>& deadline) {
    if (!waiter->Wait(deadline)) {
      if (waiter->Claim()) {
        RemoveWaiter(waiter.get());
        return ChannelStatus::kTimeout;
      }
      waiter->Wait(std::nullopt);  // completed meanwhile: the outcome is on its way
    }
    return waiter->status();
  }

  ChannelStatus SendUntil(T& value, const std::optional<SteadyTime>& deadline) {
    PendingWakes wakes;
    ChannelStatus status = ChannelStatus::kWouldBlock;
    std::shared_ptr<ChannelWaiter> waiter;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!TrySendLocked(value, &status, &wakes)) {
        waiter = std::make_shared<ChannelWaiter>();
        senders_.push_back({waiter, 0, &value});
      }
    }
    RunWakes(wakes);
    return waiter == nullptr ? status : Park(waiter, deadline);
  }

  ChannelStatus RecvUntil(T* out, const std::optional<SteadyTime>& deadline) {
    PendingWakes wakes;
    ChannelStatus status = ChannelStatus::kWouldBlock;
    std::shared_ptr<ChannelWaiter> waiter;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!TryRecvLocked(out, &status, &wakes)) {
        waiter = std::make_shared<ChannelWaiter>();
        receivers_.push_back({waiter, 0, out});
      }
    }
    RunWakes(wakes);
    return waiter == nullptr ? status : Park(waiter, deadline);
  }

  const size_t capacity_;
  // Guarded by mutex_. At most one of buffer_ having room and receivers_
  // being non-empty holds: a receiver parks only on an empty buffer.
  std::deque<T> buffer_;
  std::deque<Entry> receivers_;
  std::deque<Entry> senders_;
  bool closed_ = false;
};

}  // namespace rill
