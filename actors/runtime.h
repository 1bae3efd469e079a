// Runtime: owns the CAF actor system the actor executor's actors live in,
// with an explicit number of scheduler threads. Executors may share one
// Runtime; it must outlive them.
//
//   auto runtime = std::make_shared<Runtime>(2);   // two scheduler threads
//   ParallelExecutor exe(program, {Place::Cpu()}, &scope, strategy, runtime);
#pragma once

#include <memory>

namespace caf {
class actor_system;
}

namespace rill {

class Runtime {
 public:
  // `threads` scheduler threads; 0: the machine's cores.
  explicit Runtime(int threads = 0);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  caf::actor_system& system();
  int threads() const { return threads_; }

  // The machine's cores (at least 1).
  static int HardwareThreads();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int threads_;
};

}  // namespace rill
