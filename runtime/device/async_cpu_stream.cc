#include "runtime/device/async_cpu_stream.h"

#include <utility>

#include "rill/error.h"

namespace rill {

bool AsyncCpuEvent::Query() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->passed >= state_->recorded;
}

void AsyncCpuEvent::Synchronize() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const uint64_t target = state_->recorded;
  state_->changed.wait(lock, [&] { return state_->passed >= target; });
}

AsyncCpuStream::AsyncCpuStream(std::string name)
    : name_(std::move(name)), thread_([this] { Loop(); }) {}

AsyncCpuStream::~AsyncCpuStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void AsyncCpuStream::Push(Item item) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(item));
    ++launched_;
  }
  changed_.notify_all();
}

void AsyncCpuStream::Launch(Work work) { Push({std::move(work), nullptr, nullptr, 0}); }

void AsyncCpuStream::Record(DeviceEvent& event) {
  auto* cpu_event = dynamic_cast<AsyncCpuEvent*>(&event);
  RILL_CHECK(cpu_event != nullptr, kInvalidArgument, name_,
             ": an event of another kind of device cannot be recorded here");
  uint64_t point;
  {
    std::lock_guard<std::mutex> lock(cpu_event->state_->mutex);
    point = ++cpu_event->state_->recorded;
  }
  Push({nullptr, cpu_event->state_, nullptr, point});
}

void AsyncCpuStream::Wait(const DeviceEvent& event) {
  const auto* cpu_event = dynamic_cast<const AsyncCpuEvent*>(&event);
  RILL_CHECK(cpu_event != nullptr, kInvalidArgument, name_,
             ": cannot wait for an event of another kind of device");
  uint64_t point;
  {
    std::lock_guard<std::mutex> lock(cpu_event->state_->mutex);
    point = cpu_event->state_->recorded;
  }
  if (point == 0) return;  // never recorded
  Push({nullptr, nullptr, cpu_event->state_, point});
}

void AsyncCpuStream::Synchronize() {
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t target = launched_;
    changed_.wait(lock, [&] { return done_ >= target; });
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

std::unique_ptr<DeviceEvent> AsyncCpuStream::NewEvent() {
  return std::make_unique<AsyncCpuEvent>();
}

void AsyncCpuStream::Loop() {
  while (true) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    if (item.work) {
      try {
        item.work();
      } catch (...) {
        error = std::current_exception();
      }
    } else if (item.pass) {
      {
        std::lock_guard<std::mutex> lock(item.pass->mutex);
        if (item.pass->passed < item.point) item.pass->passed = item.point;
      }
      item.pass->changed.notify_all();
    } else if (item.wait) {
      // The recording stream moves on by itself, so this ends.
      std::unique_lock<std::mutex> lock(item.wait->mutex);
      item.wait->changed.wait(lock, [&] { return item.wait->passed >= item.point; });
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++done_;
      if (error && !error_) error_ = error;
    }
    changed_.notify_all();
  }
}

}  // namespace rill
