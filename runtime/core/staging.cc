#include "runtime/core/staging.h"

#include <cstring>

#include "rill/device_memory.h"
#include "rill/error.h"

namespace rill {

PinnedStaging::~PinnedStaging() { FreePinnedHost(data_); }

void* PinnedStaging::Reserve(size_t bytes) {
  if (bytes <= capacity_ && data_ != nullptr) return data_;
  FreePinnedHost(data_);
  data_ = nullptr;
  capacity_ = 0;
  data_ = AllocatePinnedHost(bytes);
  capacity_ = bytes;
  return data_;
}

void StageToDevice(const Tensor& host, Tensor* out, const Place& place, PinnedStaging& staging,
                   DeviceStream& stream) {
  RILL_CHECK(host.place().host_memory(), kInvalidArgument, "staging ", host.Describe(), " to ",
             place.ToString(), ": the tensor is not in host memory");
  out->Allocate(host.dtype(), host.shape(), place);
  if (host.numel() == 0) return;
  const size_t bytes = host.bytes();
  void* pinned = staging.Reserve(bytes);
  std::memcpy(pinned, host.raw_data(), bytes);
  CopyBetweenPlaces(out->raw_data(), place, pinned, Place::Cpu(), bytes, &stream);
}

Tensor StageToHost(const Tensor& device, PinnedStaging& staging, DeviceStream& stream) {
  Tensor out(device.dtype(), device.shape(), Place::Cpu());
  if (device.numel() == 0) return out;
  const size_t bytes = device.bytes();
  void* pinned = staging.Reserve(bytes);
  CopyBetweenPlaces(pinned, Place::Cpu(), device.raw_data(), device.place(), bytes, &stream);
  stream.Synchronize();
  std::memcpy(out.raw_data(), pinned, bytes);
  return out;
}

}  // namespace rill
