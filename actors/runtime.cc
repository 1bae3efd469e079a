#include "actors/runtime.h"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <thread>

namespace rill {

struct Runtime::Impl {
  struct Config : caf::actor_system_config {
    explicit Config(int threads) {
      set("scheduler.max-threads", threads);
      set("scheduler.policy", caf::atom("sharing"));
    }
  };
  explicit Impl(int threads) : config(threads), system(config) {}

  Config config;  // declared first: the system keeps a reference to it
  caf::actor_system system;
};

int Runtime::HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Runtime::Runtime(int threads) : threads_(threads > 0 ? threads : HardwareThreads()) {
  impl_ = std::make_unique<Impl>(threads_);
}

Runtime::~Runtime() = default;

caf::actor_system& Runtime::system() { return impl_->system; }

}  // namespace rill
