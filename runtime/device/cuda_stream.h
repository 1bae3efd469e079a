// CudaStream: a DeviceStream on a cudaStream_t of one device, its events
// cudaEvent_t (timing off). Launch runs the work on the calling thread with
// the stream current (CudaStream::Current()), so the kernels it launches are
// queued on the stream and the host goes on. Built only with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "rill/device_stream.h"

namespace rill {

// Throws rill::Error (kInternal) naming `what` when `status` is an error.
void CheckCuda(cudaError_t status, const std::string& what);

class CudaEvent : public DeviceEvent {
 public:
  explicit CudaEvent(int device);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  bool Query() const override;
  void Synchronize() override;
  cudaEvent_t native() const { return event_; }

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

class CudaStream : public DeviceStream {
 public:
  CudaStream(int device, std::string name);
  ~CudaStream() override;  // waits for the stream's work, then destroys it
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  std::string Describe() const override { return name_; }
  void Launch(Work work) override;
  void Record(DeviceEvent& event) override;
  void Wait(const DeviceEvent& event) override;
  void Synchronize() override;
  std::unique_ptr<DeviceEvent> NewEvent() override;

  int device() const { return device_; }
  cudaStream_t native() const { return stream_; }
  // The stream whose Launch is running on this thread (kernels launch on it);
  // the default stream outside a Launch.
  static cudaStream_t Current();
  // The device of Current(); -1 outside a Launch.
  static int CurrentDevice();
  // Runs `check` on the host once the work launched so far on the stream of
  // the Launch running on this thread has run: at that stream's next
  // Synchronize (the executor's, at the iteration's end), where what it
  // throws comes back as the stream's error. A kernel's check of what its
  // device code found (a label out of range) thus costs no wait in the middle
  // of a step; a check that only holds values until then keeps them alive
  // until the stream is past them. Outside a Launch the host waits for
  // Current() and runs `check` at once.
  static void AtSynchronize(std::function<void()> check);
  // Calls `visit` with each CudaStream of `device` alive now; none is created
  // or destroyed meanwhile. The caching allocator marks with an event on each
  // the point after which a block freed outside any stream's work is unused.
  static void ForEachStreamOf(int device, const std::function<void(cudaStream_t)>& visit);
  // Devices present; `why` says why there are none.
  static int DeviceCount(std::string* why);

 private:
  const int device_;
  const std::string name_;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;
  std::exception_ptr error_;                   // the first launch error since the last Synchronize
  std::vector<std::function<void()>> checks_;  // AtSynchronize's, in order
};

}  // namespace rill
