// A device's in-order queue of work that runs asynchronously to the host, and
// events that mark points in it: the CUDA stream and event model, which the
// actor executor's stream actors drive for device places.
//
//   producer->Launch(kernel_a);          // returns at once
//   producer->Record(*event);            // the point after kernel_a
//   consumer->Wait(*event);              // the consumer's later work waits for it,
//   consumer->Launch(kernel_b);          //   the host does not
//   consumer->Synchronize();             // the host waits (fetches, errors)
//
// Implementations: AsyncCpuStream (async_cpu_stream.h: a worker thread per
// stream, events as completion counters; what CI runs the protocol on) and
// CudaStream (cuda_stream.h, built with CUDA: cudaStream_t, cudaEvent_t).
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace rill {

class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  // True when the work before the latest Record of this event has run (and
  // when it was never recorded).
  virtual bool Query() const = 0;
  // The host waits until Query() is true.
  virtual void Synchronize() = 0;
};

class DeviceStream {
 public:
  using Work = std::function<void()>;
  virtual ~DeviceStream() = default;

  // "acpu:0 compute", "cuda:1 copy": for errors and traces.
  virtual std::string Describe() const = 0;
  // Runs `work` after everything launched before, asynchronously to the host.
  // An error it throws is kept and rethrown by the next Synchronize, and the
  // stream's later work still runs (as CUDA keeps going after a failed
  // kernel's launch is reported).
  virtual void Launch(Work work) = 0;
  // Marks the point after everything launched so far in `event` (the point a
  // later Wait or Synchronize of the event refers to).
  virtual void Record(DeviceEvent& event) = 0;
  // Work launched from now on waits until the point `event` marks now has
  // run, without blocking the host. Waiting on an event never recorded is a
  // no-op.
  virtual void Wait(const DeviceEvent& event) = 0;
  // The host waits until everything launched so far has run; then rethrows
  // the first error a work item threw since the last Synchronize.
  virtual void Synchronize() = 0;
  // An event to Record on this stream (or any stream of the same device).
  virtual std::unique_ptr<DeviceEvent> NewEvent() = 0;
};

}  // namespace rill
