// BufferPool: a cache of freed CPU blocks, keyed by their exact (64-byte
// rounded) size. Training allocates the same sizes every step, so after the
// first step a freed activation's block is handed to the next tensor of that
// size instead of going back to malloc (which maps and unmaps large blocks
// and faults their pages in again). Thread-safe; one pool per process.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rill {

struct BufferPoolStats {
  int64_t cached_bytes = 0;  // held for reuse
  int64_t in_use_bytes = 0;  // handed out and not yet returned
  int64_t peak_in_use_bytes = 0;
  int64_t reuses = 0;  // allocations served from the cache
  int64_t fresh = 0;   // allocations that went to malloc
};

class BufferPool {
 public:
  static constexpr size_t kAlignment = 64;

  static BufferPool& Instance();

  // A 64-byte aligned block of at least `bytes`; throws std::bad_alloc.
  void* Allocate(size_t bytes);
  // Returns a block from Allocate(bytes) with the same `bytes`.
  void Free(void* block, size_t bytes);

  // Blocks kept for reuse beyond this many bytes go back to the system.
  void SetCacheLimit(int64_t bytes);
  // Returns every cached block to the system.
  void Trim();
  BufferPoolStats Stats() const;
  void ResetPeak();

 private:
  BufferPool() = default;
  struct State;
  State& state() const;
};

}  // namespace rill
