// Huge pages for big arrays: those built once and then read for long (a
// planned program, an SSA graph's nodes, kernel contexts), and the tensors
// and scratch a training step sweeps. On Linux with
// transparent huge pages in "madvise" mode, memory is faulted in one 4 KB
// page at a time unless it is advised otherwise; on the 2-core VM of issue 19
// each such fault cost about 21 us (64 MB first touched in 350 ms; 6 ms with
// huge pages), so building a 100k-op graph spent most of its time there.
// Memory already faulted in pays again on that VM once the working set
// outgrows what its hypervisor keeps mapped: with 400 MB touched in between,
// a kernel sweeping 115 MB of 4 KB pages took 140 ms, on huge pages 5 ms (a
// CNN step at batch 512 spent 11% of its time in pool2d_grad that way).
//
//   std::vector<Node> nodes;
//   nodes.reserve(n);                                   // not yet touched
//   AdviseHugePages(nodes.data(), n * sizeof(Node));    // before the first write
//
// Everything here is a hint: where the kernel has no transparent huge pages,
// or off Linux, memory works as usual. Thread-safe.
#pragma once

#include <cstddef>
#include <new>

namespace rill {

// The size of a huge page (x86-64, arm64 with 4 KB base pages).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Asks the kernel to back the huge-page-aligned part of [data, data + bytes)
// with huge pages when it is first touched. Does nothing under 4 MB (too
// little to gain) and for memory already touched (it keeps its pages).
void AdviseHugePages(const void* data, size_t bytes);

// Blocks for a protobuf arena (ArenaOptions::block_alloc / block_dealloc), the
// tensor buffer pool and kernels' scratch: blocks of kHugePageBytes or more
// are their own mappings, starting on a huge-page boundary and advised as
// above; smaller ones come from the heap (16-byte aligned). Throws
// std::bad_alloc when out of memory.
void* AllocateHugePageBlock(size_t bytes);
void FreeHugePageBlock(void* block, size_t bytes);

// A std::allocator for vectors that grow big (kernels' scratch): blocks of a
// huge page or more on huge pages, as AllocateHugePageBlock.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(AllocateHugePageBlock(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { FreeHugePageBlock(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace rill
