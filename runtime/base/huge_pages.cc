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

namespace {

size_t PageRounded(size_t bytes) {
  constexpr size_t kPage = 4096;
  return (bytes + kPage - 1) / kPage * kPage;
}

}  // namespace

// The mapping starts on a huge-page boundary (mapped with a huge page of
// slack, the ends cut off), so that every whole 2 MB of the block can be one
// huge page; mmap alone aligns to 4 KB only.
void* AllocateHugePageBlock(size_t bytes) {
  if (bytes < kHugePageBytes) return ::operator new(bytes);
  const size_t length = PageRounded(bytes);
  void* mapped = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const auto begin = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (begin + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > begin) munmap(mapped, aligned - begin);
  const uintptr_t end = begin + length + kHugePageBytes;
  if (end > aligned + length)
    munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  void* block = reinterpret_cast<void*>(aligned);
  madvise(block, length, MADV_HUGEPAGE);
  return block;
}

void FreeHugePageBlock(void* block, size_t bytes) {
  if (block == nullptr) return;
  if (bytes < kHugePageBytes) {
    ::operator delete(block);
  } else {
    munmap(block, PageRounded(bytes));
  }
}

#else

void AdviseHugePages(const void*, size_t) {}
void* AllocateHugePageBlock(size_t bytes) { return ::operator new(bytes); }
void FreeHugePageBlock(void* block, size_t) { ::operator delete(block); }

#endif

}  // namespace rill
