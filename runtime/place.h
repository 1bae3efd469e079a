// Where a tensor lives and a kernel runs: the CPU, or CUDA device i (reserved
// for the GPU work; no kernel is registered for it yet).
#pragma once

#include <string>
#include <vector>

namespace rill {

struct Place {
  enum class Kind { kCpu, kCuda };

  Kind kind = Kind::kCpu;
  int device = 0;

  static Place Cpu() { return {}; }
  static Place Cuda(int device) { return {Kind::kCuda, device}; }
  bool is_cpu() const { return kind == Kind::kCpu; }

  // "cpu" or "cuda:i".
  std::string ToString() const;
  // Parses "cpu", "cpu:N" (N ignored: replicas are an executor matter) and "cuda:i".
  static Place Parse(const std::string& text);

  friend bool operator==(const Place&, const Place&) = default;
};

// A list of places: "cpu" (one), "cpu:N" (N CPU replicas), or a comma list
// such as "cuda:0,cuda:1". Throws kInvalidArgument naming the bad part.
std::vector<Place> ParsePlaces(const std::string& text);

}  // namespace rill
