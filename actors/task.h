// Task: one op of the actor graph in one iteration slot: what a stream
// queues and runs. Its countdown counts the producers it still waits for.
#pragma once

#include <atomic>
#include <cstdint>

#include "actors/countdown.h"

namespace rill {

struct Task {
  std::atomic<Task*> queue_next{nullptr};  // link in a stream's inbox
  Countdown countdown;
  int32_t node = -1;  // op node id in the graph
  int32_t slot = -1;  // iteration slot
};

}  // namespace rill
