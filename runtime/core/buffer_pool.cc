#include "runtime/core/buffer_pool.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "runtime/base/huge_pages.h"

namespace rill {
namespace {

// Under AddressSanitizer nothing is cached, so that a use after free is caught
// instead of landing in a recycled block.
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kDefaultCacheLimit = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int64_t kDefaultCacheLimit = 0;
#else
constexpr int64_t kDefaultCacheLimit = int64_t{4} << 30;
#endif
#else
constexpr int64_t kDefaultCacheLimit = int64_t{4} << 30;
#endif

size_t RoundUp(size_t bytes) {
  const size_t a = BufferPool::kAlignment;
  return bytes == 0 ? a : (bytes + a - 1) / a * a;
}

// Blocks of a huge page or more are mappings of their own on huge pages
// (huge_pages.h): a step sweeps hundreds of MB of them, and on 4 KB pages the
// sweep can cost more than the kernels' arithmetic. Smaller blocks come from
// the heap. Null when out of memory.
void* AllocateBlock(size_t size) {
  if (size < kHugePageBytes) return std::aligned_alloc(BufferPool::kAlignment, size);
  try {
    return AllocateHugePageBlock(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void FreeBlock(void* block, size_t size) {
  if (size >= kHugePageBytes) {
    FreeHugePageBlock(block, size);
  } else {
    std::free(block);
  }
}

}  // namespace

struct BufferPool::State {
  mutable std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // by rounded size
  int64_t cache_limit = kDefaultCacheLimit;
  BufferPoolStats stats;
};

BufferPool& BufferPool::Instance() {
  static BufferPool pool;
  return pool;
}

BufferPool::State& BufferPool::state() const {
  // Never destroyed: buffers may be freed by static destructors after main returns.
  static State* s = new State;
  return *s;
}

void* BufferPool::Allocate(size_t bytes) {
  const size_t size = RoundUp(bytes);
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stats.in_use_bytes += static_cast<int64_t>(size);
    if (s.stats.in_use_bytes > s.stats.peak_in_use_bytes) {
      s.stats.peak_in_use_bytes = s.stats.in_use_bytes;
    }
    auto it = s.free_blocks.find(size);
    if (it != s.free_blocks.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      s.stats.cached_bytes -= static_cast<int64_t>(size);
      ++s.stats.reuses;
      return block;
    }
    ++s.stats.fresh;
  }
  void* block = AllocateBlock(size);
  if (block == nullptr) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stats.in_use_bytes -= static_cast<int64_t>(size);
    throw std::bad_alloc();
  }
  return block;
}

void BufferPool::Free(void* block, size_t bytes) {
  if (block == nullptr) return;
  const size_t size = RoundUp(bytes);
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stats.in_use_bytes -= static_cast<int64_t>(size);
    if (s.stats.cached_bytes + static_cast<int64_t>(size) <= s.cache_limit) {
      s.free_blocks[size].push_back(block);
      s.stats.cached_bytes += static_cast<int64_t>(size);
      return;
    }
  }
  FreeBlock(block, size);
}

void BufferPool::SetCacheLimit(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    state().cache_limit = bytes;
  }
  Trim();
}

void BufferPool::Trim() {
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    blocks.swap(state().free_blocks);
    state().stats.cached_bytes = 0;
  }
  for (auto& [size, list] : blocks) {
    for (void* block : list) FreeBlock(block, size);
  }
}

BufferPoolStats BufferPool::Stats() const {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().stats;
}

void BufferPool::ResetPeak() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().stats.peak_in_use_bytes = state().stats.in_use_bytes;
}

}  // namespace rill
