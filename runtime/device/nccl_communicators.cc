#include "rill/nccl_communicators.h"

#include <mutex>

#include "rill/error.h"

#ifdef RILL_WITH_CUDA
#include <nccl.h>

#include <cstring>

#include "runtime/device/cuda_stream.h"
#endif

namespace rill {

#ifdef RILL_WITH_CUDA

namespace {

void CheckNccl(ncclResult_t status, const std::string& what) {
  if (status == ncclSuccess) return;
  Fail(ErrorCode::kInternal, what, ": ", ncclGetErrorString(status),
       status == ncclInvalidUsage || status == ncclInvalidArgument
           ? StrCat(" (", ncclGetLastError(nullptr), ")")
           : std::string());
}

ncclDataType_t NcclType(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    default: break;
  }
  Fail(ErrorCode::kUnimplemented, "NCCL sum of ", DataTypeName(dtype), " values");
}

std::string DeviceList(const std::vector<int>& devices) {
  std::string list;
  for (int d : devices) list += StrCat(list.empty() ? "" : ",", "cuda:", d);
  return list;
}

}  // namespace

struct NcclCommunicators::Native {
  std::vector<ncclComm_t> comms;
  std::mutex mutex;  // one group at a time
};

std::string NewNcclUniqueId() {
  ncclUniqueId id;
  CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return std::string(id.internal, sizeof(id.internal));
}

NcclCommunicators::NcclCommunicators(const std::vector<int>& devices)
    : devices_(devices), ranks_(static_cast<int>(devices.size())), native_(new Native) {
  RILL_CHECK(!devices.empty(), kInvalidArgument, "NCCL communicators over no device");
  native_->comms.resize(devices.size());
  CheckNccl(ncclCommInitAll(native_->comms.data(), ranks_, devices.data()),
            StrCat("ncclCommInitAll over ", DeviceList(devices)));
}

NcclCommunicators::NcclCommunicators(const std::string& unique_id, int ranks, int first_rank,
                                     const std::vector<int>& devices)
    : devices_(devices), ranks_(ranks), native_(new Native) {
  ncclUniqueId id;
  RILL_CHECK(unique_id.size() == sizeof(id.internal), kInvalidArgument, "an NCCL unique id is ",
             sizeof(id.internal), " bytes, got ", unique_id.size());
  const int local = static_cast<int>(devices.size());
  RILL_CHECK(local > 0 && first_rank >= 0 && first_rank + local <= ranks, kInvalidArgument,
             "NCCL ranks [", first_rank, ", ", first_rank + local, ") of ", ranks);
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  native_->comms.resize(devices.size());
  // ncclCommInitRank binds the current device: set for each rank, then the
  // caller's put back, and the group ended however the loop leaves.
  int previous = 0;
  CheckCuda(cudaGetDevice(&previous), "cudaGetDevice");
  CheckNccl(ncclGroupStart(), "ncclGroupStart");
  try {
    for (int r = 0; r < local; ++r) {
      CheckCuda(cudaSetDevice(devices[static_cast<size_t>(r)]), "cudaSetDevice");
      CheckNccl(
          ncclCommInitRank(&native_->comms[static_cast<size_t>(r)], ranks, id, first_rank + r),
          StrCat("ncclCommInitRank ", first_rank + r, " of ", ranks,
                 " on cuda:", devices[static_cast<size_t>(r)]));
    }
  } catch (...) {
    ncclGroupEnd();
    cudaSetDevice(previous);
    throw;
  }
  const ncclResult_t ended = ncclGroupEnd();
  cudaSetDevice(previous);
  CheckNccl(ended, StrCat("ncclCommInitRank over ", DeviceList(devices)));
}

NcclCommunicators::~NcclCommunicators() {
  if (!native_) return;
  for (ncclComm_t comm : native_->comms) {
    if (comm != nullptr) ncclCommDestroy(comm);
  }
}

void NcclCommunicators::AllReduceSum(const std::vector<std::vector<void*>>& buffers,
                                     const std::vector<int64_t>& counts,
                                     const std::vector<DataType>& dtypes,
                                     const std::vector<DeviceStream*>& streams) {
  const size_t local = devices_.size();
  RILL_CHECK(
      buffers.size() == counts.size() && dtypes.size() == counts.size() && streams.size() == local,
      kInvalidArgument, "NCCL sum: ", buffers.size(), " members with ", counts.size(), " counts, ",
      dtypes.size(), " types, ", streams.size(), " streams for ", local, " ranks");
  std::vector<cudaStream_t> native(local);
  for (size_t r = 0; r < local; ++r) {
    auto* cuda = dynamic_cast<CudaStream*>(streams[r]);
    RILL_CHECK(cuda != nullptr && cuda->device() == devices_[r], kInvalidArgument, "NCCL rank ", r,
               " (cuda:", devices_[r], ") needs a CUDA stream of its device, got ",
               streams[r] == nullptr ? std::string("none") : streams[r]->Describe());
    native[r] = cuda->native();
  }
  std::vector<ncclDataType_t> types;  // checked before the group starts
  for (size_t m = 0; m < buffers.size(); ++m) {
    RILL_CHECK(buffers[m].size() == local, kInvalidArgument, "NCCL sum: member ", m, " has ",
               buffers[m].size(), " buffers for ", local, " ranks");
    types.push_back(NcclType(dtypes[m]));
  }
  std::lock_guard<std::mutex> lock(native_->mutex);
  CheckNccl(ncclGroupStart(), "ncclGroupStart");
  for (size_t m = 0; m < buffers.size(); ++m) {
    if (counts[m] == 0) continue;
    const ncclDataType_t type = types[m];
    for (size_t r = 0; r < local; ++r) {
      const ncclResult_t status =
          ncclAllReduce(buffers[m][r], buffers[m][r], static_cast<size_t>(counts[m]), type, ncclSum,
                        native_->comms[r], native[r]);
      if (status != ncclSuccess) {
        ncclGroupEnd();
        CheckNccl(status, StrCat("ncclAllReduce of ", counts[m], " values on cuda:", devices_[r]));
      }
    }
  }
  CheckNccl(ncclGroupEnd(), StrCat("ncclAllReduce group over ", DeviceList(devices_)));
}

#else  // without CUDA

struct NcclCommunicators::Native {};

namespace {
[[noreturn]] void NoNccl(const std::string& what) {
  Fail(ErrorCode::kUnimplemented, what, ": this build of Rill has no CUDA and NCCL");
}
}  // namespace

std::string NewNcclUniqueId() { NoNccl("ncclGetUniqueId"); }

NcclCommunicators::NcclCommunicators(const std::vector<int>& devices) : devices_(devices) {
  NoNccl("NCCL communicators");
}

NcclCommunicators::NcclCommunicators(const std::string&, int, int, const std::vector<int>& devices)
    : devices_(devices) {
  NoNccl("NCCL communicators");
}

NcclCommunicators::~NcclCommunicators() = default;

void NcclCommunicators::AllReduceSum(const std::vector<std::vector<void*>>&,
                                     const std::vector<int64_t>&, const std::vector<DataType>&,
                                     const std::vector<DeviceStream*>&) {
  NoNccl("ncclAllReduce");
}

#endif

}  // namespace rill
