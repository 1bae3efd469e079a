// StreamDrainer: the threads that run an actor graph's tasks. A stream is
// drained by one thread at a time, whichever holds its claim (stream.h):
//   - a CAF worker, in the stream actor's handler after a wake message
//     (Drain): it drains that stream until the stream has stayed empty for
//     the linger time;
//   - the thread that called Run (Help): it lends itself to the runtime until
//     its iteration ends, draining its home stream (the graph's first) and any
//     other stream with work queued and nobody draining it.
// Both linger the same way (Linger): an idle drainer keeps its claim and spins
// for ExecutionStrategy::spin_before_sleep, because more work usually follows
// within microseconds (the rest of the iteration, or the next one of a
// training loop), and a hand-off to a stream that is still claimed costs a
// queue push instead of a thread's wake-up. When the runtime's threads and
// the caller outnumber the cores, a spinning thread would hold a core that a
// place with work needs: it then yields the core at each poll instead of
// pausing (Linger's `yield`).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "actors/executor/built_graph.h"
#include "actors/executor/idle_helpers.h"
#include "actors/executor/stream.h"

namespace rill {

class ActorGraph;
struct IterationSlot;

// An idle drainer's patience: polls until nothing arrived for `limit`,
// pausing the CPU between polls, or with `yield` giving the core to any other
// runnable thread.
class Linger {
 public:
  Linger(std::chrono::microseconds limit, bool yield);
  // Work came: the patience starts over.
  void Worked();
  // Pauses once; false once idle for longer than the limit.
  bool Wait();

 private:
  using Clock = std::chrono::steady_clock;
  const std::chrono::microseconds limit_;
  const bool yield_;
  Clock::time_point idle_since_;
  int spins_ = 0;
};

class StreamDrainer {
 public:
  // Runs tasks of `streams` through `graph` (ActorGraph::Invoke). Stops
  // lingering at once when `shut_down` is set; `oversubscribed`: more
  // threads may drain than there are cores (lingering yields).
  // Threads without tasks take parts of `helpers`' jobs (null: none) while
  // they hold a stream, so no more threads compute than there are streams.
  StreamDrainer(ActorGraph& graph, const std::vector<std::unique_ptr<Stream>>& streams,
                IdleHelpers* helpers, std::chrono::microseconds linger, bool oversubscribed,
                const std::atomic<bool>& shut_down);

  // A stream actor was woken: drains `stream` unless another thread holds it.
  void Drain(Stream& stream);
  // The calling thread runs tasks until `slot`'s iteration of `generation` is
  // done (or stays idle for the linger time: the iteration then ends on other
  // threads and the caller waits for its future). `holding_home` says whether
  // it already holds the home stream's claim (taken before the sources went out).
  void Help(const IterationSlot& slot, uint32_t generation, bool holding_home);
  // DependencyWait::kStreamSync, for debugging ordering: before `node` runs on
  // `self`, each other stream it depends on must have gone idle (nothing
  // queued, no kernel running), as a host-side stream synchronisation would.
  // Bounded, so two streams waiting on each other go on.
  void WaitForProducers(const BuiltGraph::Node& node, const Stream& self) const;

 private:
  // Runs what `stream` holds now; whether it ran anything.
  bool RunAvailable(Stream& stream);
  // Takes parts of an offered ParallelFor job; whether it ran any.
  bool HelpKernels() { return helpers_ != nullptr && helpers_->Help(); }
  // Stream::ReleaseOrReclaim, also taking the claim back for a job offered
  // meanwhile (IdleHelpers::HasOfferedParts): true when the caller must go on.
  bool ReleaseOrReclaim(Stream& stream);

  ActorGraph& graph_;
  const std::vector<std::unique_ptr<Stream>>& streams_;
  IdleHelpers* const helpers_;
  const std::chrono::microseconds linger_;
  const bool oversubscribed_;
  const std::atomic<bool>& shut_down_;
};

}  // namespace rill
