#include "runtime/base/huge_pages.h"

#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rill {

#if defined(__linux__) && defined(MADV_HUGEPAGE)

void AdviseHugePages(const void* data, size_t bytes) {
  if (bytes < 2 * kHugePageBytes) return;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const uintptr_t last = (begin + bytes) & ~(kHugePageBytes - 1);
  if (last <= first) return;
  madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // a hint: may fail
}

void* AllocateHugePageBlock(size_t bytes) {
  if (bytes < kHugePageBytes) return ::operator new(bytes);
  void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  madvise(block, bytes, MADV_HUGEPAGE);
  return block;
}

void FreeHugePageBlock(void* block, size_t bytes) {
  if (bytes < kHugePageBytes) {
    ::operator delete(block);
  } else {
    munmap(block, bytes);
  }
}

#else

void AdviseHugePages(const void*, size_t) {}
void* AllocateHugePageBlock(size_t bytes) { return ::operator new(bytes); }
void FreeHugePageBlock(void* block, size_t) { ::operator delete(block); }

#endif

}  // namespace rill
