#include "runtime/device/cuda_stream.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "rill/error.h"

namespace rill {
namespace {

thread_local cudaStream_t current_stream = nullptr;
thread_local int current_device = -1;              // current_stream's
thread_local CudaStream* current_owner = nullptr;  // the CudaStream of current_stream

// Every CudaStream alive, for ForEachStreamOf.
std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<CudaStream*>& Registry() {
  static auto* streams =
      new std::vector<CudaStream*>;  // never destroyed, as streams may outlive statics
  return *streams;
}

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
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().push_back(this);
}

CudaStream::~CudaStream() {
  if (stream_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    std::erase(Registry(), this);
  }
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
}

void CudaStream::ForEachStreamOf(int device, const std::function<void(cudaStream_t)>& visit) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (CudaStream* stream : Registry()) {
    if (stream->device_ == device) visit(stream->stream_);
  }
}

void CudaStream::Launch(Work work) {
  DeviceGuard guard(device_);
  const cudaStream_t outer = current_stream;
  const int outer_device = current_device;
  CudaStream* const outer_owner = current_owner;
  current_stream = stream_;
  current_device = device_;
  current_owner = this;
  try {
    work();
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  current_stream = outer;
  current_device = outer_device;
  current_owner = outer_owner;
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
  // The checks taken before the wait are for work launched before it; one
  // added meanwhile (another thread launching) waits for the next Synchronize.
  std::vector<std::function<void()>> checks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(checks, checks_);
  }
  CheckCuda(cudaStreamSynchronize(stream_), name_ + ": cudaStreamSynchronize");
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(error, error_);
  }
  for (auto& check : checks) {
    try {
      check();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  checks.clear();  // what the checks held is released after the wait
  if (error) std::rethrow_exception(error);
}

void CudaStream::AtSynchronize(std::function<void()> check) {
  if (current_owner == nullptr) {
    CheckCuda(cudaStreamSynchronize(current_stream), "cudaStreamSynchronize before a check");
    check();
    return;
  }
  std::lock_guard<std::mutex> lock(current_owner->mutex_);
  current_owner->checks_.push_back(std::move(check));
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
