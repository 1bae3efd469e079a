// Where a tensor lives and a kernel runs: the CPU; asynchronous CPU device i
// ("acpu:i": host memory and the CPU kernels, but each of its streams runs
// its work on a thread of its own, asynchronously to the executor, with
// events between streams — the GPU's execution model without a GPU, so the
// stream and event protocol is exercised where there is none); or CUDA
// device i.
#pragma once

#include <string>
#include <vector>

namespace rill {

struct Place {
  enum class Kind { kCpu, kCuda, kAsyncCpu };

  Kind kind = Kind::kCpu;
  int device = 0;

  static Place Cpu() { return {}; }
  static Place Cuda(int device) { return {Kind::kCuda, device}; }
  static Place AsyncCpu(int device) { return {Kind::kAsyncCpu, device}; }
  bool is_cpu() const { return kind == Kind::kCpu; }
  // Work on this place goes to device streams (stream.h's DeviceStream), not
  // run by the executor's threads.
  bool is_device() const { return kind != Kind::kCpu; }
  // Its memory is host memory (tensors there are CPU tensors).
  bool host_memory() const { return kind != Kind::kCuda; }

  // "cpu", "cuda:i" or "acpu:i".
  std::string ToString() const;
  // Parses "cpu", "cpu:N" (N ignored: replicas are an executor matter), "cuda:i"
  // and "acpu:i".
  static Place Parse(const std::string& text);

  friend bool operator==(const Place&, const Place&) = default;
};

// A list of places: "cpu" (one), "cpu:N" (N CPU replicas), or a comma list
// such as "cuda:0,cuda:1" or "acpu:0,acpu:1". Throws kInvalidArgument naming
// the bad part.
std::vector<Place> ParsePlaces(const std::string& text);

}  // namespace rill
