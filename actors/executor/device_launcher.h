// DeviceLauncher: how an actor graph runs ops on device places ("acpu:i",
// "cuda:i"). Each of a device place's executor streams owns a device stream
// (compute), and the place has a comm stream for its merge chunks; places
// with device memory (CUDA) also have a copy stream for feeds and fetches and
// merge their gradients with NCCL. Ops there are launched, not run: the
// executor's stream makes the device wait for the op's producers on other
// device streams (DependencyWait::kEvent: their events; kStreamSync: the host
// waits for their streams), launches the kernel, records the op's event and
// passes readiness on at once. The iteration's end waits for the devices. The
// same code drives the asynchronous CPU device (each stream a thread) and, in
// a CUDA build, GPU streams.
//
// Threads: built before the graph is shared; launches come from whichever
// thread drains the op's executor stream; MoveParametersToDevices locks.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "actors/executor/built_graph.h"
#include "actors/executor/gradient_merge.h"
#include "actors/executor/iteration_slot.h"
#include "actors/executor/stream.h"
#include "rill/device_stream.h"
#include "rill/execution_strategy.h"
#include "rill/nccl_communicators.h"

namespace rill {

class DeviceLauncher {
 public:
  // Device streams for the device places among `graph`'s places (none when
  // every place is a CPU place). Throws naming the places when their merges
  // cannot run (CUDA places mixed with others, kReduce or compression on CUDA).
  DeviceLauncher(const BuiltGraph& graph, const std::vector<std::unique_ptr<Stream>>& streams,
                 const BuildStrategy& build, DependencyWait wait);

  // Whether any place is a device place.
  bool any() const { return !device_streams_.empty(); }
  // Whether any place has memory of its own (CUDA: feeds and fetches are copied).
  bool device_memory() const { return !copy_streams_.empty(); }
  // Whether merges run on NCCL (several CUDA places).
  bool nccl() const { return nccl_ != nullptr; }
  // Whether `task` runs on a device stream.
  bool OnDevice(const Task& task) const {
    return task.stream >= 0 && !device_streams_.empty() && device_streams_[task.stream] != nullptr;
  }

  // A slot's device events (one per node of a device place, one per merge
  // chunk) and pinned feed buffers.
  void PrepareSlot(IterationSlot& slot) const;
  // Launches `kernel` (which runs the op and reports its errors) on `task`'s
  // device stream after the op's producers, and records the op's event.
  void LaunchKernel(const Task& task, IterationSlot& slot, DeviceStream::Work kernel);
  // A feed on a place with device memory: copied there through pinned memory
  // on the place's copy stream (its consumers wait for that copy); elsewhere
  // bound as on the CPU. Throws what the copy throws.
  void StageFeed(int node, int feed, IterationSlot& slot);
  // A fetched value in host memory (device values copied on the copy stream).
  Tensor FetchedToHost(const Tensor& value, int place, size_t fetch, IterationSlot& slot);
  // Persistable variables (parameters, optimizer state) in host memory move to
  // the places with device memory that use them, once.
  void MoveParametersToDevices(IterationSlot& slot);
  // Before a merge reads its gradients' shapes on the host: the asynchronous
  // CPU device's kernels size their outputs when they run.
  void WaitForGradients(const GradientMerge& merge, IterationSlot& slot);
  // A merge chunk of a device place: `reduce` launched on the place's comm
  // stream after every place's gradient; false for a CPU place (run it there).
  bool LaunchChunk(const Task& chunk, const GradientMerge& merge, IterationSlot& slot,
                   DeviceStream::Work reduce);
  // A merge of CUDA places: one grouped NCCL allreduce on the places' comm
  // streams after each place's gradients; the optimizer ops wait for the comm
  // streams' events. Throws naming the member for selected rows or unlike gradients.
  void AllReduceOnNccl(const GradientMerge& merge, MergeState& state, IterationSlot& slot,
                       const GradientMerger& merger);
  // The host waits for every device stream (the iteration's end); a stream's
  // error fails the slot.
  void SynchronizeDevices(IterationSlot& slot);
  // Lets launched work run out and drops the streams (shutdown).
  void Stop();

 private:
  void BuildCudaPlaces(const BuildStrategy& build);
  // Makes `device`'s next work wait for the producers of `node` on other streams.
  void WaitForDeviceInputs(int node, DeviceStream& device, IterationSlot& slot);

  const BuiltGraph& graph_;
  const DependencyWait wait_;
  // By global stream id (null for CPU places' streams); each place's comm
  // stream and, for places with device memory, copy stream (null elsewhere).
  std::vector<std::unique_ptr<DeviceStream>> device_streams_;
  std::vector<std::unique_ptr<DeviceStream>> comm_streams_;
  std::vector<std::unique_ptr<DeviceStream>> copy_streams_;
  std::unique_ptr<NcclCommunicators> nccl_;
  std::mutex parameters_mutex_;  // MoveParametersToDevices
};

}  // namespace rill
