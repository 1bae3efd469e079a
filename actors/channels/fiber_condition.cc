#include "rill/fiber_condition.h"

#include <boost/fiber/condition_variable.hpp>
#include <new>

namespace rill {
namespace {

using Condition = boost::fibers::condition_variable_any;

Condition& Of(unsigned char* storage) {
  return *std::launder(reinterpret_cast<Condition*>(storage));
}

}  // namespace

FiberCondition::FiberCondition() {
  static_assert(sizeof(Condition) <= kSize && alignof(Condition) <= alignof(std::max_align_t),
                "FiberCondition::storage_ is too small for Boost.Fiber's condition variable");
  new (storage_) Condition();
}

FiberCondition::~FiberCondition() { Of(storage_).~Condition(); }

void FiberCondition::NotifyAll() { Of(storage_).notify_all(); }

void FiberCondition::Wait(std::unique_lock<std::mutex>& lock) { Of(storage_).wait(lock); }

bool FiberCondition::WaitUntil(std::unique_lock<std::mutex>& lock, SteadyTime deadline) {
  return Of(storage_).wait_until(lock, deadline) == boost::fibers::cv_status::no_timeout;
}

}  // namespace rill
