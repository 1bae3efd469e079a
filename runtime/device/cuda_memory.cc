#include "runtime/device/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/device/cuda_stream.h"
#include "runtime/error.h"

namespace rill {
namespace {

constexpr size_t kSmall = size_t{1} << 20;
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = size_t{2} << 20;

size_t RoundUp(size_t bytes) {
  const size_t unit = bytes < kSmall ? kSmallRound : kLargeRound;
  return (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
}

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}

  void* Allocate(size_t bytes) {
    const size_t size = RoundUp(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest cached block that fits and wastes at most half of itself.
    auto it = cached_.lower_bound(size);
    void* data = nullptr;
    size_t block = size;
    if (it != cached_.end() && it->first <= 2 * size) {
      block = it->first;
      data = it->second;
      cached_.erase(it);
      stats_.cached_bytes -= static_cast<int64_t>(block);
    } else {
      data = Malloc(size);
    }
    sizes_[data] = block;
    stats_.in_use_bytes += static_cast<int64_t>(block);
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    return data;
  }

  void Free(void* data) {
    if (data == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(data);
    if (it == sizes_.end()) return;  // not ours
    const size_t block = it->second;
    sizes_.erase(it);
    cached_.emplace(block, data);
    stats_.in_use_bytes -= static_cast<int64_t>(block);
    stats_.cached_bytes += static_cast<int64_t>(block);
  }

  DeviceMemoryStats Stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void ReleaseCached() {
    std::lock_guard<std::mutex> lock(mutex_);
    ReleaseCachedLocked();
  }

 private:
  void ReleaseCachedLocked() {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device_);
    for (auto& [size, data] : cached_) cudaFree(data);
    cudaSetDevice(previous);
    cached_.clear();
    stats_.cached_bytes = 0;
  }

  void* Malloc(size_t size) {
    int previous = 0;
    CheckCuda(cudaGetDevice(&previous), "cudaGetDevice");
    CheckCuda(cudaSetDevice(device_), StrCat("cudaSetDevice(", device_, ")"));
    void* data = nullptr;
    cudaError_t status = cudaMalloc(&data, size);
    if (status == cudaErrorMemoryAllocation) {  // give the cache back, once
      cudaGetLastError();
      ReleaseCachedLocked();
      status = cudaMalloc(&data, size);
    }
    cudaSetDevice(previous);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      Fail(ErrorCode::kUnavailable, "cuda:", device_, ": out of memory allocating ", size,
           " bytes (", stats_.in_use_bytes, " in use)");
    }
    CheckCuda(status, StrCat("cuda:", device_, ": cudaMalloc of ", size, " bytes"));
    ++stats_.device_allocations;
    return data;
  }

  const int device_;
  std::mutex mutex_;
  std::multimap<size_t, void*> cached_;  // by block size
  std::map<void*, size_t> sizes_;        // blocks handed out
  DeviceMemoryStats stats_;
};

CachingAllocator& AllocatorFor(int device) {
  static std::mutex mutex;
  // Never destroyed: buffers may be freed by static destructors.
  static auto* allocators = new std::map<int, std::unique_ptr<CachingAllocator>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto& allocator = (*allocators)[device];
  if (!allocator) allocator = std::make_unique<CachingAllocator>(device);
  return *allocator;
}

}  // namespace

void* CudaAllocate(int device, size_t bytes) { return AllocatorFor(device).Allocate(bytes); }
void CudaFree(int device, void* data, size_t /*bytes*/) { AllocatorFor(device).Free(data); }
DeviceMemoryStats CudaMemoryStats(int device) { return AllocatorFor(device).Stats(); }
void CudaReleaseCached(int device) { AllocatorFor(device).ReleaseCached(); }

void CudaCopy(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
              DeviceStream* stream) {
  if (bytes == 0) return;
  const cudaMemcpyKind kind = dst_device < 0   ? cudaMemcpyDeviceToHost
                              : src_device < 0 ? cudaMemcpyHostToDevice
                                               : cudaMemcpyDeviceToDevice;
  auto* cuda = dynamic_cast<CudaStream*>(stream);
  if (cuda == nullptr) {
    CheckCuda(cudaMemcpy(dst, src, bytes, kind), "cudaMemcpy");
    return;
  }
  CheckCuda(cudaMemcpyAsync(dst, src, bytes, kind, cuda->native()),
            cuda->Describe() + ": cudaMemcpyAsync");
}

}  // namespace rill
