// Stream: the queue of runnable tasks of one place, drained by one thread at
// a time. A stream is an actor in the sense that matters here: it has a
// mailbox (an intrusive MPSC inbox, plus a private stack for what its own
// tasks make ready), one behaviour (run the next task), and is woken by a CAF
// message when work arrives and nobody drains it. Any thread may drain it
// after claiming it: a CAF worker in the stream actor's handler, or the thread
// that called ParallelExecutor::Run, which lends itself to the runtime until
// its iteration ends.
//
// Threads: Submit and the read-only queries from any thread; everything else
// only by the thread holding the claim. Claim and release are acquire/release,
// so the private state passes safely from one claimer to the next.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <cstdint>
#include <vector>

#include "actors/executor/mpsc_queue.h"
#include "actors/executor/task.h"
#include "rill/trace_recorder.h"

namespace rill {

class Stream {
 public:
  Stream(int id, int place, int index_in_place) : id_(id), place_(place), index_(index_in_place) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int id() const { return id_; }
  int place() const { return place_; }
  int index_in_place() const { return index_; }

  // -- any thread ------------------------------------------------------------
  // Queues a runnable task; sends the stream actor a wake message when no
  // thread holds the claim (at most one wake is in flight).
  void Submit(Task* task) {
    inbox_.Push(task);
    queued_.fetch_add(1, std::memory_order_seq_cst);
    if (!claimed_.load(std::memory_order_seq_cst)) Wake();
  }
  // Like Submit, for work that goes before everything queued (gradient merges).
  void SubmitUrgent(Task* task) {
    urgent_.Push(task);
    urgent_queued_.fetch_add(1, std::memory_order_seq_cst);
    queued_.fetch_add(1, std::memory_order_seq_cst);
    if (!claimed_.load(std::memory_order_seq_cst)) Wake();
  }
  // Wakes the stream's actor when no thread holds the claim, so that a thread
  // comes to drain it (and, finding no task, takes parts of offered jobs).
  void WakeIfIdle() {
    if (!claimed_.load(std::memory_order_seq_cst)) Wake();
  }
  bool HasQueuedWork() const { return queued_.load(std::memory_order_seq_cst) > 0; }
  bool claimed() const { return claimed_.load(std::memory_order_acquire); }
  // Tasks run on this stream so far (for progress checks).
  uint64_t executed() const { return executed_.load(std::memory_order_relaxed); }
  // The node whose kernel runs now, or -1.
  int running_node() const { return running_node_.load(std::memory_order_relaxed); }

  bool TryClaim() {
    bool expected = false;
    return claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
  }

  // -- the claimer -----------------------------------------------------------
  // Gives the claim up. Returns true when work arrived meanwhile and the claim
  // was taken back: the caller must go on draining.
  bool ReleaseOrReclaim() {
    SettlePopped();
    claimed_.store(false, std::memory_order_seq_cst);
    return HasQueuedWork() && TryClaim();
  }
  void PushLocal(Task* task) { local_.push_back(task); }
  // The next task: urgent work first (gradient merge chunks, so that merges
  // overlap the rest of backward), then the newest made ready by this stream's
  // own tasks (depth first, warm caches), then the inbox in arrival order.
  // nullptr when empty.
  Task* Next() {
    if (urgent_queued_.load(std::memory_order_acquire) > 0) {
      if (Task* t = urgent_.Pop()) {
        urgent_queued_.fetch_sub(1, std::memory_order_relaxed);
        queued_.fetch_sub(1, std::memory_order_relaxed);
        return t;
      }
    }
    if (!local_.empty()) {
      Task* t = local_.back();
      local_.pop_back();
      return t;
    }
    if (Task* t = inbox_.Pop()) {
      ++popped_;  // queued_ is settled in bulk: one write to the producers' line, not one per task
      return t;
    }
    SettlePopped();
    while (queued_.load(std::memory_order_acquire) > 0) {
      if (Task* t = inbox_.Pop()) {
        queued_.fetch_sub(1, std::memory_order_relaxed);
        return t;
      }
      if (urgent_queued_.load(std::memory_order_acquire) > 0) {
        if (Task* t = urgent_.Pop()) {
          urgent_queued_.fetch_sub(1, std::memory_order_relaxed);
          queued_.fetch_sub(1, std::memory_order_relaxed);
          return t;
        }
      }
      // A producer counted its task but has not finished linking it: a few ns.
    }
    return nullptr;
  }
  bool HasLocalWork() const { return !local_.empty(); }
  void CountExecuted() {
    executed_.store(executed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void SetRunning(int node) { running_node_.store(node, std::memory_order_relaxed); }

  // -- wiring ------------------------------------------------------------------
  void set_actor(caf::actor actor) { actor_ = std::move(actor); }
  const caf::actor& actor() const { return actor_; }
  // The stream actor got a wake message: the next Submit may send another.
  void ClearWakePending() { wake_pending_.store(false, std::memory_order_seq_cst); }
  // Wakes are recorded (sent here, received by the graph) while `trace` is on.
  void set_trace(TraceRecorder* trace, int lane) {
    trace_ = trace;
    trace_lane_ = lane;
  }
  int trace_lane() const { return trace_lane_; }
  // The trace id of the wake in flight (0: none recorded), taken once.
  uint32_t TakeWakeId() { return wake_id_.exchange(0, std::memory_order_acq_rel); }

 private:
  void Wake();
  void SettlePopped() {
    if (popped_ == 0) return;
    queued_.fetch_sub(popped_, std::memory_order_relaxed);
    popped_ = 0;
  }

  // Fields are grouped by who writes them, one cache line per group, so the
  // drainer's bookkeeping does not bounce the producers' line and back.
  const int id_;
  const int place_;
  const int index_;
  caf::actor actor_;  // set once before any Submit
  TraceRecorder* trace_ = nullptr;
  int trace_lane_ = 0;

  // Written by producers.
  alignas(64) MpscQueue<Task> inbox_;
  alignas(64) MpscQueue<Task> urgent_;
  alignas(64) std::atomic<int64_t> queued_{0};  // pushed to either inbox and not yet settled
  std::atomic<int64_t> urgent_queued_{0};       // pushed to urgent_ and not yet popped
  std::atomic<bool> wake_pending_{false};
  std::atomic<uint32_t> wake_id_{0};

  // Written on claim and release only.
  alignas(64) std::atomic<bool> claimed_{false};

  // Written by the claimer.
  alignas(64) std::vector<Task*> local_;
  int64_t popped_ = 0;                 // popped from the inbox, not yet taken off queued_
  std::atomic<uint64_t> executed_{0};  // tasks run so far
  std::atomic<int> running_node_{-1};  // node whose kernel runs now
};

}  // namespace rill
