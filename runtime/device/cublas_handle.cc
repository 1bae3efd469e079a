#include "runtime/device/cublas_handle.h"

#include <map>
#include <utility>

#include "rill/error.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// A thread's handles by device and stream; destroyed with the thread. A
// handle per stream, not per thread: a handle's workspace must not be used
// by two streams whose work may overlap on the device.
class ThreadHandles {
 public:
  ThreadHandles() = default;
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;
  ~ThreadHandles() {
    for (auto& [device, handle] : handles_) cublasDestroy(handle);
  }

  cublasHandle_t For(int device, cudaStream_t stream) {
    auto it = handles_.find({device, stream});
    if (it != handles_.end()) return it->second;
    cublasHandle_t handle = nullptr;
    CheckCublas(cublasCreate(&handle), StrCat("cublasCreate on cuda:", device));
    const cublasStatus_t bound = cublasSetStream(handle, stream);
    if (bound != CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
    CheckCublas(bound, "cublasSetStream");
    handles_.emplace(std::make_pair(device, stream), handle);
    return handle;
  }

 private:
  std::map<std::pair<int, cudaStream_t>, cublasHandle_t> handles_;
};

}  // namespace

void CheckCublas(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  Fail(ErrorCode::kInternal, what, ": ", cublasGetStatusName(status), " (",
       cublasGetStatusString(status), ")");
}

cublasHandle_t CublasHandle(cudaStream_t stream) {
  thread_local ThreadHandles handles;
  int device = 0;
  CheckCuda(cudaGetDevice(&device), "cudaGetDevice");
  return handles.For(device, stream);
}

}  // namespace rill
