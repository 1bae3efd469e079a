// cuBLAS handles for kernels (built with CUDA only): one per thread and
// stream, created on first use and bound to that stream, so GEMMs are queued
// in the stream's order and streams never share a handle's workspace. Default math
// mode (no TF32): float32 GEMMs round as float32, as the CPU's do.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace rill {

// Throws rill::Error (kInternal) naming `what` when `status` is an error.
void CheckCublas(cublasStatus_t status, const std::string& what);

// The calling thread's handle for `stream` (of the current device).
cublasHandle_t CublasHandle(cudaStream_t stream);

}  // namespace rill
