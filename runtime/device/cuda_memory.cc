#include "runtime/device/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "rill/error.h"
#include "runtime/device/cuda_stream.h"

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
    auto fits = [&](auto i) { return i != cached_.end() && i->first <= 2 * size; };
    if (!fits(it) && !pending_.empty()) {
      RecyclePendingLocked(/*synchronize=*/false);
      it = cached_.lower_bound(size);
      if (!fits(it) && PendingUnorderedFits(size)) {
        RecyclePendingLocked(/*synchronize=*/true);
        it = cached_.lower_bound(size);
      }
    }
    if (fits(it)) {
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
    pending_.push_back({block, data, RecordFreeLocked()});
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
  // A freed block: reusable once `event` has completed, or (no event) once
  // the whole device has finished what was queued before the free.
  struct Pending {
    size_t size;
    void* data;
    cudaEvent_t event;
  };

  // An event after the work queued so far on the freeing thread's stream
  // (CudaStream::Current(): the stream of the op whose kernel freed the block
  // — a stream that has waited for the block's other readers), or null when
  // the thread launches on no stream of this device.
  cudaEvent_t RecordFreeLocked() {
    cudaStream_t stream = CudaStream::Current();
    if (stream == nullptr || CudaStream::CurrentDevice() != device_) return nullptr;
    cudaEvent_t event = nullptr;
    if (!spare_events_.empty()) {
      event = spare_events_.back();
      spare_events_.pop_back();
    } else if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    if (cudaEventRecord(event, stream) != cudaSuccess) {
      cudaGetLastError();
      spare_events_.push_back(event);
      return nullptr;
    }
    return event;
  }

  // Whether a pending block without an event would serve a request of `size`.
  bool PendingUnorderedFits(size_t size) const {
    for (const Pending& p : pending_) {
      if (p.event == nullptr && p.size >= size && p.size <= 2 * size) return true;
    }
    return false;
  }

  // Pending blocks whose event has completed become cached; with
  // `synchronize`, the device is waited for first and all of them do.
  void RecyclePendingLocked(bool synchronize) {
    if (synchronize) {
      int previous = 0;
      CheckCuda(cudaGetDevice(&previous), "cudaGetDevice");
      CheckCuda(cudaSetDevice(device_), StrCat("cudaSetDevice(", device_, ")"));
      const cudaError_t status = cudaDeviceSynchronize();
      cudaSetDevice(previous);
      CheckCuda(status,
                StrCat("cuda:", device_, ": cudaDeviceSynchronize before reusing freed blocks"));
    }
    std::vector<Pending> still;
    for (const Pending& p : pending_) {
      bool done = synchronize;
      if (!done && p.event != nullptr) {
        const cudaError_t status = cudaEventQuery(p.event);
        if (status != cudaErrorNotReady) cudaGetLastError();
        done = status != cudaErrorNotReady;  // completed (or failed: the device is lost anyway)
      }
      if (!done) {
        still.push_back(p);
        continue;
      }
      cached_.emplace(p.size, p.data);
      if (p.event != nullptr) spare_events_.push_back(p.event);
    }
    pending_ = std::move(still);
  }

  void ReleaseCachedLocked() {
    if (!pending_.empty()) RecyclePendingLocked(/*synchronize=*/true);
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
  std::vector<Pending> pending_;         // freed, maybe still used by queued kernels
  std::vector<cudaEvent_t> spare_events_;
  std::map<void*, size_t> sizes_;  // blocks handed out
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

void* CudaAllocatePinned(size_t bytes) {
  void* data = nullptr;
  CheckCuda(cudaHostAlloc(&data, std::max<size_t>(bytes, 1), cudaHostAllocPortable),
            StrCat("cudaHostAlloc of ", bytes, " pinned bytes"));
  return data;
}

void CudaFreePinned(void* data) {
  if (data != nullptr) cudaFreeHost(data);
}

void CudaCopy(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
              DeviceStream* stream) {
  if (bytes == 0) return;
  const cudaMemcpyKind kind = dst_device < 0   ? cudaMemcpyDeviceToHost
                              : src_device < 0 ? cudaMemcpyHostToDevice
                                               : cudaMemcpyDeviceToDevice;
  auto* cuda = dynamic_cast<CudaStream*>(stream);
  if (cuda == nullptr) {
    // Done when this returns, after the work queued so far on the stream the
    // calling thread launches on (a kernel's inputs). Not cudaMemcpy: it runs
    // on the legacy default stream, which does not synchronise with the
    // executor's non-blocking streams, and it may return before a copy from
    // pageable host memory or between devices' memory has landed.
    const cudaStream_t current = CudaStream::Current();
    CheckCuda(cudaMemcpyAsync(dst, src, bytes, kind, current), "cudaMemcpyAsync");
    CheckCuda(cudaStreamSynchronize(current), "cudaStreamSynchronize after cudaMemcpyAsync");
    return;
  }
  CheckCuda(cudaMemcpyAsync(dst, src, bytes, kind, cuda->native()),
            cuda->Describe() + ": cudaMemcpyAsync");
}

}  // namespace rill
