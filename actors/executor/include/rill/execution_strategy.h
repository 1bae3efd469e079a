// ExecutionStrategy: how the actor executor runs a graph. The defaults suit
// training on this machine; every field is safe to change per executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rill/build_strategy.h"

namespace rill {

class TraceRecorder;

// How an op waits for a producer that ran on another stream.
enum class DependencyWait {
  // The producer's completion is signalled to the consumer (CPU: the countdown
  // arrival itself; CUDA: an event recorded after the producer and waited on by
  // the consumer's stream). Nothing blocks.
  kEvent,
  // The consumer first waits until the producer's stream has finished all the
  // work queued on it so far. Slower; for debugging ordering problems.
  kStreamSync,
};

// How an idle executor thread polls for work while it lingers.
enum class LingerPoll {
  // kYield when the runtime's threads and the thread that calls Run outnumber
  // the machine's cores, else kPause.
  kAuto,
  // Pauses the CPU between polls: the quickest to see new work, but the core
  // stays busy.
  kPause,
  // Gives the core to any other runnable thread between polls (a system call).
  kYield,
};

struct ExecutionStrategy {
  // Threads that run kernels, which is also the number of streams of each CPU
  // place (at most this many ops run at once per place). 0: the machine's cores.
  int num_threads = 0;
  // Iterations that may run at once. More than 1 only for programs with no
  // state carried between iterations (inference): a run then waits while this
  // many are in flight. Training programs always run one at a time.
  int max_iterations_in_flight = 1;
  DependencyWait dependency_wait = DependencyWait::kEvent;
  // How ops are spread over a place's streams (round robin: for tests).
  StreamAssignment stream_assignment = StreamAssignment::kCostModel;
  // An iteration with no op finishing for this long is reported; when no op is
  // running either, it fails with a timeout. 0 disables the watchdog.
  std::chrono::milliseconds watchdog_timeout{60000};
  // Where watchdog reports go (default: the log sink, rill/log.h, as a warning).
  std::function<void(const std::string&)> on_watchdog_report;
  // How long an idle stream (and a caller waiting for its iteration) keeps
  // polling for work before it lets its thread sleep: back-to-back training
  // steps then find their threads awake. 0: sleep at once.
  std::chrono::microseconds spin_before_sleep{200};
  LingerPoll linger_poll = LingerPoll::kAuto;
  // Free an intermediate variable's buffer once its last reader has run, for
  // variables estimated to hold at least release_min_bytes.
  bool release_memory_early = true;
  int64_t release_min_bytes = 64 * 1024;
  // OpenBLAS threads; 0: cores / num_threads (at least 1), so the two do not
  // oversubscribe the machine. The setting is process-wide.
  int blas_threads = 0;
  // Records kernels, messages and waits while the recorder is on
  // (actors/trace/include/rill/trace_recorder.h). Null: the recorder of the RILL_TRACE
  // environment variable when it is set, else nothing is recorded.
  std::shared_ptr<TraceRecorder> trace;
  // Set by a parallel_do op for the graphs of its places: the op's lane and
  // the place, so that their lanes join the enclosing trace's.
  struct TraceParent {
    int lane = -1;
    int place = -1;
  } trace_parent;
};

}  // namespace rill
