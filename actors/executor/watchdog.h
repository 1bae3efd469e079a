// Watchdog: an actor graph's check for iterations that stopped moving. A CAF
// actor (WatchdogActor) calls Tick every quarter of the timeout. When no op
// finished for the whole ExecutionStrategy::watchdog_timeout: if a kernel is
// running it reports the slow op once; if work waits in a queue nobody
// drains, it wakes the stream; if nothing runs or waits, it reports which ops
// wait for which inputs from whom and aborts the iteration with a timeout.
//
// Threads: Tick runs on the watchdog actor only (its own fields are unshared);
// it reads the streams' and slots' atomics.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/executor/async_ops.h"
#include "actors/executor/built_graph.h"
#include "actors/executor/iteration_slot.h"
#include "actors/executor/stream.h"
#include "rill/execution_strategy.h"

namespace rill {

class Watchdog {
 public:
  // Ends an iteration that cannot finish, saying why.
  using AbortFn = std::function<void(IterationSlot& slot, const std::string& why)>;

  Watchdog(const BuiltGraph& graph, const std::vector<std::unique_ptr<Stream>>& streams,
           const std::vector<std::unique_ptr<IterationSlot>>& slots, const AsyncOps& async,
           const ExecutionStrategy& strategy, AbortFn abort);

  // The periodic look at the iterations in flight (`in_flight` of them).
  void Tick(int in_flight);
  // Whether a kernel, block op or custom op actor is running now.
  bool AnyKernelRunning() const;
  // Which ops of `slot`'s iteration wait for inputs from ops that never ran.
  std::string StallReport(const IterationSlot& slot) const;

 private:
  using Clock = std::chrono::steady_clock;
  void Emit(const std::string& text) const;

  const BuiltGraph& graph_;
  const std::vector<std::unique_ptr<Stream>>& streams_;
  const std::vector<std::unique_ptr<IterationSlot>>& slots_;
  const AsyncOps& async_;
  const ExecutionStrategy& strategy_;
  AbortFn abort_;
  uint64_t progress_ = 0;
  Clock::time_point last_change_;
  bool reported_ = false;  // the slow op of this stall was reported
};

}  // namespace rill
