// NCCL communicators over CUDA devices, and the grouped in-place sums the
// actor executor's merges of CUDA places are made of (built with CUDA; in a
// build without it every call throws kUnimplemented naming what was asked).
//
//   NcclCommunicators comms({0, 1});                   // ranks 0, 1 of one process
//   comms.AllReduceSum({{grad0_dev0, grad0_dev1}, {grad1_dev0, grad1_dev1}},
//                      {n0, n1}, {DataType::kFloat32, DataType::kFloat32},
//                      {&comm0, &comm1});
//
// Several processes (nodes): node 0 makes an id (NewNcclUniqueId), the others
// get its bytes over Rill's transport (actors/distributed/include/rill/unique_id_exchange.h),
// and each node builds its ranks [first_rank, first_rank + devices) of `ranks`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rill/data_type.h"
#include "rill/device_stream.h"

namespace rill {

// The bytes of a new ncclUniqueId (NCCL_UNIQUE_ID_BYTES of them).
std::string NewNcclUniqueId();

class NcclCommunicators {
 public:
  // One communicator per device, ranks 0..devices-1 (ncclCommInitAll). NCCL
  // refuses a device given twice; the error says so.
  explicit NcclCommunicators(const std::vector<int>& devices);
  // This process's ranks of a communicator over several processes.
  NcclCommunicators(const std::string& unique_id, int ranks, int first_rank,
                    const std::vector<int>& devices);
  ~NcclCommunicators();
  NcclCommunicators(const NcclCommunicators&) = delete;
  NcclCommunicators& operator=(const NcclCommunicators&) = delete;

  int local_ranks() const { return static_cast<int>(devices_.size()); }
  int ranks() const { return ranks_; }

  // In one NCCL group: for every member m and local rank r, buffers[m][r]
  // (counts[m] elements of dtypes[m] on device r) becomes the sum of that
  // member's buffers over all ranks, queued on streams[r] (CUDA streams of
  // the ranks' devices). Calls from several threads are serialised (a
  // communicator is used by one thread at a time), so every rank sees the
  // groups in the same order.
  void AllReduceSum(const std::vector<std::vector<void*>>& buffers,
                    const std::vector<int64_t>& counts, const std::vector<DataType>& dtypes,
                    const std::vector<DeviceStream*>& streams);

 private:
  struct Native;
  std::vector<int> devices_;
  int ranks_ = 0;
  std::unique_ptr<Native> native_;
};

}  // namespace rill
