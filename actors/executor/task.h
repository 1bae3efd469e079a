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

// What running a task means (ActorGraph::Invoke switches on it). The first
// three run on their stream; the others start on the thread that makes them
// ready and end later, or elsewhere (a blocking op that can try first makes
// its attempt on its stream: ActorGraph::Dispatch).
enum class TaskKind : uint8_t {
  kKernel,      // runs an op's kernel (launches it, on a device place)
  kFeed,        // binds a fed value (copies it to the device, on a CUDA place)
  kChunk,       // one place's part of a gradient merge, run before the place's other tasks
  kCollective,  // a gradient merge's barrier: issues the chunks where its countdown reaches zero
  kBlock,       // a block op (parallel_do): its places run nested graphs; ends with the last
  kFiber,       // a Blocking() op (channels, while, select): its kernel runs on a fiber
  kActor,       // a custom op actor (op_actor.h): sent a message, ends when it says done
};

// Whether tasks of `kind` are queued on their stream (else started where they become ready).
inline bool RunsOnStream(TaskKind kind) { return kind <= TaskKind::kChunk; }

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

// The hot path's layout: a task and everything it touches to run and pass
// readiness on share one cache line (and no line with another task).
static_assert(sizeof(Task) == 64, "a Task is one cache line");

}  // namespace rill
