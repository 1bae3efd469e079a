#include "runtime/device/cuda_stream.h"

#include <utility>

#include "rill/error.h"

namespace rill {
namespace {

thread_local cudaStream_t current_stream = nullptr;
thread_local int current_device = -1;  // current_stream's

// Makes `device` current on this thread for a scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CheckCuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) CheckCuda(cudaSetDevice(device), "cudaSetDevice");
    changed_ = previous_ != device;
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace

void CheckCuda(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  Fail(ErrorCode::kInternal, what, ": ", cudaGetErrorName(status), " (", cudaGetErrorString(status),
       ")");
}

CudaEvent::CudaEvent(int device) : device_(device) {
  DeviceGuard guard(device_);
  CheckCuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

bool CudaEvent::Query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) return false;
  CheckCuda(status, "cudaEventQuery");
  return true;
}

void CudaEvent::Synchronize() { CheckCuda(cudaEventSynchronize(event_), "cudaEventSynchronize"); }

CudaStream::CudaStream(int device, std::string name) : device_(device), name_(std::move(name)) {
  DeviceGuard guard(device_);
  CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
            name_ + ": cudaStreamCreate");
}

CudaStream::~CudaStream() {
  if (stream_ == nullptr) return;
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
}

void CudaStream::Launch(Work work) {
  DeviceGuard guard(device_);
  const cudaStream_t outer = current_stream;
  const int outer_device = current_device;
  current_stream = stream_;
  current_device = device_;
  try {
    work();
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  current_stream = outer;
  current_device = outer_device;
}

void CudaStream::Record(DeviceEvent& event) {
  auto* cuda_event = dynamic_cast<CudaEvent*>(&event);
  RILL_CHECK(cuda_event != nullptr, kInvalidArgument, name_,
             ": an event of another kind of device cannot be recorded here");
  CheckCuda(cudaEventRecord(cuda_event->native(), stream_), name_ + ": cudaEventRecord");
}

void CudaStream::Wait(const DeviceEvent& event) {
  const auto* cuda_event = dynamic_cast<const CudaEvent*>(&event);
  RILL_CHECK(cuda_event != nullptr, kInvalidArgument, name_,
             ": cannot wait for an event of another kind of device");
  CheckCuda(cudaStreamWaitEvent(stream_, cuda_event->native(), 0), name_ + ": cudaStreamWaitEvent");
}

void CudaStream::Synchronize() {
  CheckCuda(cudaStreamSynchronize(stream_), name_ + ": cudaStreamSynchronize");
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

std::unique_ptr<DeviceEvent> CudaStream::NewEvent() { return std::make_unique<CudaEvent>(device_); }

cudaStream_t CudaStream::Current() { return current_stream; }

int CudaStream::CurrentDevice() { return current_device; }

int CudaStream::DeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Without a driver (no GPU machine): cudaErrorInsufficientDriver, and
    // `count` is left unwritten.
    if (why != nullptr) {
      *why = StrCat("cudaGetDeviceCount: ", cudaGetErrorName(status), " (",
                    cudaGetErrorString(status), ")");
    }
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "cudaGetDeviceCount found no CUDA device";
  return count;
}

}  // namespace rill
