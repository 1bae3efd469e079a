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
    if (void* same = TakeFreedOnThisStreamLocked(size)) return same;
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
    return HandOutLocked(data, block);
  }

  void Free(void* data) {
    if (data == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(data);
    if (it == sizes_.end()) return;  // not ours
    const size_t block = it->second;
    sizes_.erase(it);
    pending_.push_back(RecordFreeLocked(block, data));
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
  // A freed block: reusable once its events have completed (the point the
  // free was at on the streams that may still use it), or, unordered, once
  // the whole device has finished what was queued before the free.
  struct Pending {
    size_t size = 0;
    void* data = nullptr;
    std::vector<cudaEvent_t> events;
    cudaStream_t stream = nullptr;  // freed in work on this stream (its one event)
    bool unordered = false;
  };

  // A block freed on the stream the caller launches on can be handed out at
  // once, its event not yet reached: the caller's work runs after everything
  // that stream had queued at the free (stream order), as the caching
  // allocators of the CUDA frameworks do. The smallest that fits, as below;
  // null when none.
  void* TakeFreedOnThisStreamLocked(size_t size) {
    const cudaStream_t stream = CudaStream::Current();
    if (stream == nullptr || CudaStream::CurrentDevice() != device_) return nullptr;
    auto best = pending_.end();
    for (auto p = pending_.begin(); p != pending_.end(); ++p) {
      if (p->stream != stream || p->size < size || p->size > 2 * size) continue;
      if (best == pending_.end() || p->size < best->size) best = p;
    }
    if (best == pending_.end()) return nullptr;
    void* data = best->data;
    const size_t block = best->size;
    // Re-recorded later: recording again an event not yet reached is allowed.
    spare_events_.insert(spare_events_.end(), best->events.begin(), best->events.end());
    pending_.erase(best);
    stats_.cached_bytes -= static_cast<int64_t>(block);
    return HandOutLocked(data, block);
  }

  // Counts `data` (a block of `block` bytes) as handed out, and returns it.
  void* HandOutLocked(void* data, size_t block) {
    sizes_[data] = block;
    stats_.in_use_bytes += static_cast<int64_t>(block);
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    return data;
  }

  // An event of this device recorded on `stream`, or null when CUDA refuses.
  cudaEvent_t RecordOnLocked(cudaStream_t stream) {
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

  // Where a block freed now is safe after. Freed in a kernel's launch on a
  // stream of this device (CudaStream::Current(): the stream of the op whose
  // kernel freed it — a stream that has waited for the block's other
  // readers): an event after that stream's work so far. Freed elsewhere (the
  // executor dropping a feed or a fetch between launches): an event on every
  // stream of the device, as any of them may still read it. Unordered (the
  // device is waited for before reuse) when there is no stream to mark or
  // CUDA refuses an event.
  Pending RecordFreeLocked(size_t block, void* data) {
    Pending p;
    p.size = block;
    p.data = data;
    const cudaStream_t current = CudaStream::Current();
    if (current != nullptr && CudaStream::CurrentDevice() == device_) {
      if (cudaEvent_t event = RecordOnLocked(current)) {
        p.events.push_back(event);
        p.stream = current;
      } else {
        p.unordered = true;
      }
      return p;
    }
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device_) != cudaSuccess) {
      cudaGetLastError();
      p.unordered = true;
      return p;
    }
    bool refused = false;
    CudaStream::ForEachStreamOf(device_, [&](cudaStream_t stream) {
      if (cudaEvent_t event = RecordOnLocked(stream)) {
        p.events.push_back(event);
      } else {
        refused = true;
      }
    });
    cudaSetDevice(previous);
    p.unordered = refused || p.events.empty();
    return p;
  }

  // Whether an unordered pending block would serve a request of `size`.
  bool PendingUnorderedFits(size_t size) const {
    for (const Pending& p : pending_) {
      if (p.unordered && p.size >= size && p.size <= 2 * size) return true;
    }
    return false;
  }

  // Pending blocks whose events have all completed become cached; with
  // `synchronize`, the device is waited for first and all of them do.
  void RecyclePendingLocked(bool synchronize) {
    if (synchronize) {
      int previous = 0;
      CheckCuda(cudaGetDevice(&previous), "cudaGetDevice");
      CheckCuda(cudaSetDevice(device_), StrCat("cudaSetDevice(", device_, ")"));
      const cudaError_t status = cudaDeviceSynchronize();
      ++stats_.device_synchronizations;
      cudaSetDevice(previous);
      CheckCuda(status,
                StrCat("cuda:", device_, ": cudaDeviceSynchronize before reusing freed blocks"));
    }
    std::vector<Pending> still;
    for (Pending& p : pending_) {
      bool done = synchronize || !p.unordered;
      for (size_t e = 0; done && !synchronize && e < p.events.size(); ++e) {
        const cudaError_t status = cudaEventQuery(p.events[e]);
        if (status != cudaErrorNotReady) cudaGetLastError();
        done = status != cudaErrorNotReady;  // completed (or failed: the device is lost anyway)
      }
      if (!done) {
        still.push_back(std::move(p));
        continue;
      }
      cached_.emplace(p.size, p.data);
      spare_events_.insert(spare_events_.end(), p.events.begin(), p.events.end());
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
