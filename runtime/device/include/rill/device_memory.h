// Memory of places whose memory is not the host's (CUDA devices): a caching
// allocator per device — freed blocks are kept and handed out again, so a
// training step does not call cudaMalloc — with its counters, and copies
// between places. Buffer (tensor.h) allocates through it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rill/device_stream.h"
#include "rill/place.h"

namespace rill {

struct DeviceMemoryStats {
  int64_t in_use_bytes = 0;        // handed out and not freed
  int64_t peak_in_use_bytes = 0;   // the most in_use_bytes has been
  int64_t cached_bytes = 0;        // freed, kept for reuse
  int64_t device_allocations = 0;  // cudaMalloc calls so far
  // Times the allocator waited for the whole device to reuse a block freed
  // outside any stream's work (a host-side stall of every stream).
  int64_t device_synchronizations = 0;
};

// Throws rill::Error kUnimplemented for a place with host memory or in a
// build without CUDA, and kUnavailable (naming the place and the size)
// when the device is out of memory even after its cache is released.
void* AllocateDeviceMemory(const Place& place, size_t bytes);
void FreeDeviceMemory(const Place& place, void* data, size_t bytes);
DeviceMemoryStats GetDeviceMemoryStats(const Place& place);
// Gives the device's cached blocks back to the driver.
void ReleaseCachedDeviceMemory(const Place& place);

// Page-locked host memory (cudaHostAlloc), so that copies between it and a
// device are asynchronous. Throws kUnimplemented in a build without CUDA.
void* AllocatePinnedHost(size_t bytes);
void FreePinnedHost(void* data);

// Copies `bytes` between two places (host memory or a device's). With a
// stream, the copy is queued on it (pinned host memory makes it
// asynchronous); without, it is done when this returns.
void CopyBetweenPlaces(void* dst, const Place& dst_place, const void* src, const Place& src_place,
                       size_t bytes, DeviceStream* stream = nullptr);

}  // namespace rill
