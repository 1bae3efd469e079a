// The same op graph as a oneTBB flow graph, the baseline of `rill bench dag`:
// one continue_node per op calling the op's kernel, one edge per dependency.
#pragma once

#include <memory>
#include <vector>

#include "rill/executor.h"

namespace rill::cli {

class TbbFlowDag {
 public:
  // Kernels and contexts come from `prepared` (which must outlive this);
  // predecessors[i] lists the ops op i waits for. Runs on `threads` threads.
  TbbFlowDag(const std::vector<std::vector<int>>& predecessors, PreparedBlock& prepared,
             int threads);
  ~TbbFlowDag();
  // Runs every op once, in dependency order, and waits for all.
  void Run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::cli
