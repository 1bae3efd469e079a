// The CUDA side of device_memory.h (built with CUDA only): a caching
// allocator per device. Blocks are rounded up (512 B under 1 MiB, 2 MiB
// multiples above) and a freed block is kept and handed out again for a
// request of at most its size and at least half of it. A block may be freed
// on the host while kernels queued on a stream still use it (a kernel's
// scratch, an output reallocated at a shape change), so a freed block is
// pending until an event recorded at the free on the freeing thread's stream
// (CudaStream::Current()) has completed; a block freed outside any stream of
// its device waits for a device synchronisation, done only when such a block
// would serve a request the cache cannot. cached_bytes counts pending blocks.
#pragma once

#include <cstddef>

#include "rill/device_memory.h"

namespace rill {

void* CudaAllocate(int device, size_t bytes);
void CudaFree(int device, void* data, size_t bytes);
DeviceMemoryStats CudaMemoryStats(int device);
void CudaReleaseCached(int device);
void* CudaAllocatePinned(size_t bytes);
void CudaFreePinned(void* data);
// Copies between host (device -1) and devices: queued on `stream` when it is
// a CudaStream, else done (on CudaStream::Current()) before this returns.
void CudaCopy(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
              DeviceStream* stream);

}  // namespace rill
