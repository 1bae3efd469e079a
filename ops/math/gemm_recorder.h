// GemmRecorder: while one is alive, every CPU Gemm call of the process
// appends its shape to it. For benchmarks: the products of one training step,
// replayed alone, are the step's GEMM-only bound (tools/bench/mlp_benchmark).
// Costs the Gemm calls one relaxed atomic load when no recorder is installed.
// Threads: Gemm may record from any thread; one recorder at a time.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace rill {

struct GemmCall {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;  // beta != 0
  bool double_precision = false;
};

class GemmRecorder {
 public:
  GemmRecorder();   // installs itself; throws if another recorder is installed
  ~GemmRecorder();  // only while no Gemm runs
  GemmRecorder(const GemmRecorder&) = delete;
  GemmRecorder& operator=(const GemmRecorder&) = delete;

  std::vector<GemmCall> calls() const;

  // Called by Gemm.
  static void Record(const GemmCall& call);

 private:
  mutable std::mutex mutex_;
  std::vector<GemmCall> calls_;
};

}  // namespace rill
