#include "rill/runtime.h"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>
#include <mutex>
#include <thread>

#include "actors/channels/fiber_pool.h"
#include "actors/executor/runtime_internals.h"

namespace rill {

struct Runtime::Impl {
  struct Config : caf::actor_system_config {
    Config(int threads, bool network) {
      set("scheduler.max-threads", threads);
      set("scheduler.policy", caf::atom("sharing"));
      if (network) load<caf::io::middleman>();
    }
  };
  Impl(int threads, bool network) : config(threads, network), system(config) {}

  Config config;  // declared first: the system keeps a reference to it
  caf::actor_system system;
  std::once_flag fibers_started;
  // Declared last, so destroyed first: fibers may still talk to actors.
  std::unique_ptr<FiberPool> fibers;
};

int Runtime::HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Runtime::Runtime(int threads, int fiber_threads, bool network)
    : threads_(threads > 0 ? threads : HardwareThreads()),
      fiber_threads_(fiber_threads),
      network_(network) {
  impl_ = std::make_unique<Impl>(threads_, network_);
}

Runtime::~Runtime() {
  if (impl_->fibers) impl_->fibers->Shutdown();
}

FiberPool& FiberPoolOf(Runtime& runtime) {
  std::call_once(runtime.impl_->fibers_started, [&runtime] {
    FiberPool::Options options;
    options.threads = runtime.fiber_threads_;
    runtime.impl_->fibers = std::make_unique<FiberPool>(options);
  });
  return *runtime.impl_->fibers;
}

caf::actor_system& ActorSystemOf(Runtime& runtime) { return runtime.impl_->system; }

}  // namespace rill
