// The CUDA side of device_memory.h (built with CUDA only): a caching
// allocator per device. Blocks are rounded up (512 B under 1 MiB, 2 MiB
// multiples above) and a freed block is kept and handed out again for a
// request of at most its size and at least half of it. A block is reused on
// any stream of its device: graphs on device places free nothing while
// their iteration's work is in flight (the actor executor synchronises
// the devices at each iteration's end and frees no buffer early).
#pragma once

#include <cstddef>

#include "runtime/device/device_memory.h"

namespace rill {

void* CudaAllocate(int device, size_t bytes);
void CudaFree(int device, void* data, size_t bytes);
DeviceMemoryStats CudaMemoryStats(int device);
void CudaReleaseCached(int device);
// cudaMemcpy(Async) between host (device -1) and devices.
void CudaCopy(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
              DeviceStream* stream);

}  // namespace rill
