// Feeds and fetches of places whose memory is a device's: the host tensor is
// copied through a page-locked (pinned) buffer, so the device copy is queued
// on a stream (the place's copy stream) and the host goes on.
//
//   PinnedStaging staging;                                 // one per feed and slot
//   StageToDevice(batch, &x, cuda0, staging, copy);        // queued; returns at once
//   copy.Record(*event);                                   // consumers wait for it
//   ...
//   Tensor loss = StageToHost(device_loss, staging, copy);  // waits for `copy`
#pragma once

#include <cstddef>

#include "rill/device_stream.h"
#include "rill/tensor.h"

namespace rill {

// A page-locked host buffer that grows on demand and is kept for reuse.
class PinnedStaging {
 public:
  PinnedStaging() = default;
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // At least `bytes` of pinned memory (the old contents are not kept).
  void* Reserve(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

// `out` on `place` (device memory; its buffer reused when it fits) holding
// `host`'s values: `host` is copied into `staging` now, and from there to the
// device by work queued on `stream`. Neither `staging` nor `out` may be
// reused before `stream` has passed this copy.
void StageToDevice(const Tensor& host, Tensor* out, const Place& place, PinnedStaging& staging,
                   DeviceStream& stream);

// A new host tensor holding `device`'s values, copied through `staging` by work
// queued on `stream`; waits for `stream` (after everything queued before).
Tensor StageToHost(const Tensor& device, PinnedStaging& staging, DeviceStream& stream);

}  // namespace rill
