#include "runtime/device/device.h"

#include "runtime/device/async_cpu_stream.h"
#include "runtime/error.h"

#ifdef RILL_WITH_CUDA
#include "runtime/device/cuda_stream.h"
#endif

namespace rill {

std::unique_ptr<DeviceStream> NewDeviceStream(const Place& place, const std::string& role) {
  const std::string name = StrCat(place.ToString(), " ", role);
  switch (place.kind) {
    case Place::Kind::kAsyncCpu: return std::make_unique<AsyncCpuStream>(name);
    case Place::Kind::kCuda:
#ifdef RILL_WITH_CUDA
      return std::make_unique<CudaStream>(place.device, name);
#else
      Fail(ErrorCode::kUnimplemented, name, ": this build of Rill has no CUDA (configure found no ",
           "nvcc, or RILL_CUDA=OFF)");
#endif
    case Place::Kind::kCpu: break;
  }
  Fail(ErrorCode::kUnimplemented, name, ": the CPU place has no device streams");
}

bool BuiltWithCuda() {
#ifdef RILL_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int CudaDeviceCount(std::string* why) {
#ifdef RILL_WITH_CUDA
  return CudaStream::DeviceCount(why);
#else
  if (why != nullptr) *why = "this build of Rill has no CUDA";
  return 0;
#endif
}

}  // namespace rill
