// Device streams for a place: the asynchronous CPU device always, CUDA
// devices when Rill was built with CUDA (RILL_WITH_CUDA).
#pragma once

#include <memory>
#include <string>

#include "rill/device_stream.h"
#include "rill/place.h"

namespace rill {

// A new stream of a device place; `role` names it ("compute 0", "comm").
// Throws rill::Error kUnimplemented for the CPU place (its work runs on the
// executor's threads) and for CUDA in a build without it, naming the place.
std::unique_ptr<DeviceStream> NewDeviceStream(const Place& place, const std::string& role);

// Whether this build has CUDA (and NCCL) in it.
bool BuiltWithCuda();
// CUDA devices present (0 without CUDA, without a driver, or without a GPU);
// `why`, when not null, says why there are none (the CUDA error text).
int CudaDeviceCount(std::string* why = nullptr);

}  // namespace rill
