// Task: one op of the actor graph in one iteration slot: what a stream
// queues and runs. It holds everything running the op and passing readiness
// on needs, in one cache line: the countdown of producers it still waits for,
// its kernel and bound context, and its successors. The static fields are
// written once when the graph is built; queue_next and countdown change at
// run time (see mpsc_queue.h and countdown.h for who writes them when).
#pragma once

#include <atomic>
#include <cstdint>

#include "actors/executor/countdown.h"
#include "rill/kernel_context.h"
#include "rill/op_schema.h"

namespace rill {

enum class TaskKind : uint8_t {
  kKernel,      // runs an op's kernel
  kFeed,        // binds a fed value
  kCollective,  // a gradient merge's barrier: issued where its countdown reaches zero
  kChunk,       // one place's part of a merge, run on that place's stream
  kBlock,       // a block op (parallel_do): started where it becomes ready, ends later
  kFiber,       // a Blocking() op (channels, while, select): its kernel runs on a fiber
  kActor,       // a custom op actor (op_actor.h): sent a message, ends when it says done
};

struct alignas(64) Task {
  std::atomic<Task*> queue_next{nullptr};  // link in a stream's inbox
  Countdown countdown;
  const KernelFn* kernel = nullptr;     // kKernel only
  KernelContext* context = nullptr;     // bound to the scope of the op's place in this slot
  const int32_t* successors = nullptr;  // task indices of the same slot
  int32_t successor_count = 0;
  int32_t node = -1;  // op node id (a chunk: its collective's node)
  uint32_t predecessor_count = 0;
  int16_t stream = 0;  // global stream id (-1: a collective)
  int16_t slot = -1;   // iteration slot
  TaskKind kind = TaskKind::kKernel;
  bool sink = false;          // arrives at the slot's terminal countdown
  bool has_releases = false;  // frees variables after running
  bool backward = false;      // a backward op (counted for merge overlap)
  int16_t place = 0;          // a chunk: the place whose part it reduces
};

}  // namespace rill
