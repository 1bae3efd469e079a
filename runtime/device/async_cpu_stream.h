// AsyncCpuStream: a DeviceStream whose work runs on a thread of its own, in
// launch order, while the host goes on: the asynchronous CPU device that
// exercises the stream and event protocol (cross-stream waits, host waits,
// ordering) without a GPU. Its events are completion counters: Record
// numbers a point, the stream's thread publishes each point it passes, and a
// Wait queues "block this thread until the point is published".
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rill/device_stream.h"

namespace rill {

class AsyncCpuEvent : public DeviceEvent {
 public:
  bool Query() const override;
  void Synchronize() override;

 private:
  friend class AsyncCpuStream;
  // Recorded points are numbered 1, 2, ...; `passed` is the last one a
  // stream's thread has reached.
  struct State {
    mutable std::mutex mutex;
    std::condition_variable changed;
    uint64_t recorded = 0;  // by the host, at Record
    uint64_t passed = 0;    // by the recording stream's thread
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

class AsyncCpuStream : public DeviceStream {
 public:
  explicit AsyncCpuStream(std::string name);
  ~AsyncCpuStream() override;  // runs what is queued, then stops the thread
  AsyncCpuStream(const AsyncCpuStream&) = delete;
  AsyncCpuStream& operator=(const AsyncCpuStream&) = delete;

  std::string Describe() const override { return name_; }
  void Launch(Work work) override;
  void Record(DeviceEvent& event) override;
  void Wait(const DeviceEvent& event) override;
  void Synchronize() override;
  std::unique_ptr<DeviceEvent> NewEvent() override;

 private:
  struct Item {
    Work work;                                   // run it, or
    std::shared_ptr<AsyncCpuEvent::State> pass;  // publish point `point` of this event, or
    std::shared_ptr<AsyncCpuEvent::State> wait;  // wait for point `point` of this event
    uint64_t point = 0;
  };
  void Push(Item item);
  void Loop();

  const std::string name_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;    // guarded by mutex_
  uint64_t launched_ = 0;     // items pushed; guarded by mutex_
  uint64_t done_ = 0;         // items finished; guarded by mutex_
  bool stopping_ = false;     // guarded by mutex_
  std::exception_ptr error_;  // the first error since the last Synchronize; guarded by mutex_
  std::thread thread_;
};

}  // namespace rill
