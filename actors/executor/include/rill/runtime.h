// Runtime: owns the CAF actor system the actor executor's actors live in,
// with an explicit number of scheduler threads, and the fiber pool where
// whatever waits on channels runs (started on first use). Executors may share
// one Runtime; it must outlive them.
//
//   auto runtime = std::make_shared<Runtime>(2);   // two scheduler threads
//   ParallelExecutor exe(program, &scope, {.strategy = strategy, .runtime = runtime});
#pragma once

#include <memory>

namespace caf {
class actor_system;
}

namespace rill {

class FiberPool;

class Runtime {
 public:
  // `threads` scheduler threads (0: the machine's cores) and `fiber_threads`
  // threads in the fiber pool. With `network`, CAF's middleman (its TCP layer
  // and a thread of its own) is loaded, for the actors that talk to other
  // processes (parameter servers, send and recv).
  explicit Runtime(int threads = 0, int fiber_threads = 1, bool network = false);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int threads() const { return threads_; }
  // Whether the middleman is loaded (constructed with `network`).
  bool network() const { return network_; }

  // The machine's cores (at least 1).
  static int HardwareThreads();

 private:
  // What the library's own actors and fibers live in (actors/executor/runtime_internals.h).
  friend caf::actor_system& ActorSystemOf(Runtime& runtime);
  friend FiberPool& FiberPoolOf(Runtime& runtime);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  int threads_;
  int fiber_threads_;
  bool network_;
};

}  // namespace rill
