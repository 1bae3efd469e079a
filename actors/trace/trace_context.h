// What a thread is doing for the trace right now: which actor's lane, in
// which iteration, so that code far from the executor (a channel op parking,
// a stream being woken) can record an event on the right lane. Set by the
// executor around a traced kernel; empty (no recorder) otherwise, and then
// recording costs one thread-local load.
#pragma once

#include <cstdint>

#include "rill/trace_recorder.h"

namespace rill {

struct TraceContext {
  TraceRecorder* recorder = nullptr;
  int lane = 0;
  int graph = 0;
  int iteration = -1;
  int64_t kernel_end_ns = 0;  // when the lane's last kernel ended (its sends bind to it)
};

TraceContext& CurrentTrace();

// When a message `lane` sends now leaves, for the trace: 1 ns before the end of
// the kernel the thread just ran on that lane (so viewers bind the arrow to
// that kernel), else now.
int64_t TraceSendTime(const TraceContext& context, int lane);

// Sets the thread's context for a scope and empties it after (fibers share a
// thread: the next body sets its own).
class ScopedTraceContext {
 public:
  explicit ScopedTraceContext(const TraceContext& context) { CurrentTrace() = context; }
  ~ScopedTraceContext() { CurrentTrace() = TraceContext{}; }
  ScopedTraceContext(const ScopedTraceContext&) = delete;
  ScopedTraceContext& operator=(const ScopedTraceContext&) = delete;
};

// Records the scope as a wait of `kind` on the current lane, when tracing.
// `what` names what is waited for (a channel, a barrier).
class TraceWait {
 public:
  TraceWait(WaitKind kind, const std::string& what);
  ~TraceWait();
  TraceWait(const TraceWait&) = delete;
  TraceWait& operator=(const TraceWait&) = delete;

 private:
  TraceContext context_;  // as it was when the wait began
  WaitKind kind_;
  int what_ = -1;
  int64_t begin_ns_ = 0;
};

}  // namespace rill
