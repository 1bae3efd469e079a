#include "rill/device.h"

#include <cstring>

#include "rill/device_memory.h"
#include "rill/error.h"
#include "runtime/device/async_cpu_stream.h"

#ifdef RILL_WITH_CUDA
#include "runtime/device/cuda_memory.h"
#include "runtime/device/cuda_stream.h"
#endif

namespace rill {

std::unique_ptr<DeviceStream> NewDeviceStream(const Place& place, const std::string& role) {
  const std::string name = StrCat(place.ToString(), " ", role);
  switch (place.kind) {
    case Place::Kind::kAsyncCpu: return std::make_unique<AsyncCpuStream>(name);
    case Place::Kind::kCuda: {
#ifdef RILL_WITH_CUDA
      std::string why;
      const int devices = CudaStream::DeviceCount(&why);
      RILL_CHECK(place.device >= 0 && place.device < devices, kUnavailable, name,
                 ": no such CUDA device (", devices, " found",
                 why.empty() ? std::string() : StrCat(": ", why), ")");
      return std::make_unique<CudaStream>(place.device, name);
#else
      Fail(ErrorCode::kUnimplemented, name, ": this build of Rill has no CUDA (configure found no ",
           "nvcc, or RILL_CUDA=OFF)");
#endif
    }
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

namespace {

// The CUDA device behind a place that has device memory.
int CudaDeviceOf(const Place& place) {
  RILL_CHECK(!place.host_memory(), kUnimplemented, place.ToString(),
             " has host memory: no device allocator");
#ifndef RILL_WITH_CUDA
  Fail(ErrorCode::kUnimplemented, place.ToString(), ": this build of Rill has no CUDA");
#endif
  return place.device;
}

}  // namespace

void* AllocateDeviceMemory(const Place& place, size_t bytes) {
  [[maybe_unused]] const int device = CudaDeviceOf(place);
#ifdef RILL_WITH_CUDA
  return CudaAllocate(device, bytes);
#else
  (void)bytes;
  return nullptr;
#endif
}

void FreeDeviceMemory(const Place& place, void* data, size_t bytes) {
#ifdef RILL_WITH_CUDA
  if (!place.host_memory()) CudaFree(place.device, data, bytes);
#else
  (void)place, (void)data, (void)bytes;
#endif
}

DeviceMemoryStats GetDeviceMemoryStats(const Place& place) {
  [[maybe_unused]] const int device = CudaDeviceOf(place);
#ifdef RILL_WITH_CUDA
  return CudaMemoryStats(device);
#else
  return {};
#endif
}

void ReleaseCachedDeviceMemory(const Place& place) {
  [[maybe_unused]] const int device = CudaDeviceOf(place);
#ifdef RILL_WITH_CUDA
  CudaReleaseCached(device);
#endif
}

void* AllocatePinnedHost(size_t bytes) {
#ifdef RILL_WITH_CUDA
  return CudaAllocatePinned(bytes);
#else
  Fail(ErrorCode::kUnimplemented, "pinned host memory of ", bytes,
       " bytes: this build of Rill has no CUDA");
#endif
}

void FreePinnedHost(void* data) {
#ifdef RILL_WITH_CUDA
  CudaFreePinned(data);
#else
  (void)data;
#endif
}

void CopyBetweenPlaces(void* dst, const Place& dst_place, const void* src, const Place& src_place,
                       size_t bytes, DeviceStream* stream) {
  if (dst_place.host_memory() && src_place.host_memory()) {
    if (stream == nullptr) {
      std::memcpy(dst, src, bytes);
    } else {
      stream->Launch([dst, src, bytes] { std::memcpy(dst, src, bytes); });
    }
    return;
  }
#ifdef RILL_WITH_CUDA
  CudaCopy(dst, dst_place.host_memory() ? -1 : dst_place.device, src,
           src_place.host_memory() ? -1 : src_place.device, bytes, stream);
#else
  Fail(ErrorCode::kUnimplemented, "copy from ", src_place.ToString(), " to ", dst_place.ToString(),
       ": this build of Rill has no CUDA");
#endif
}

}  // namespace rill
