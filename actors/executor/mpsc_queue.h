// MpscQueue: an intrusive, unbounded, lock-free queue with many producers and
// one consumer at a time (D. Vyukov's design). A node is any T with a member
// `std::atomic<T*> queue_next`; pushing it allocates nothing. A node may sit
// in at most one queue at a time.
//
// Threads: Push from any thread. Pop only from the current consumer; the
// consumer may change between threads when they hand the role over with
// acquire/release synchronisation (Stream does so through its claim flag).
#pragma once

#include <atomic>

namespace rill {

template <class T>
class MpscQueue {
 public:
  MpscQueue() { stub_.queue_next.store(nullptr, std::memory_order_relaxed); }
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  void Push(T* node) {
    node->queue_next.store(nullptr, std::memory_order_relaxed);
    T* previous = head_.exchange(node, std::memory_order_acq_rel);
    previous->queue_next.store(node, std::memory_order_release);
  }

  // The oldest node, or nullptr when the queue is empty or a push that began
  // first has not finished linking (the pusher then notices and acts: see Stream).
  T* Pop() {
    T* tail = tail_;
    T* next = tail->queue_next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = next->queue_next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // a push is linking
    Push(&stub_);
    next = tail->queue_next.load(std::memory_order_acquire);
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

 private:
  // Producers write head_, the consumer tail_: separate cache lines.
  alignas(64) std::atomic<T*> head_{&stub_};
  alignas(64) T* tail_ = &stub_;
  T stub_;
};

}  // namespace rill
