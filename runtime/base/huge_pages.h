// Huge pages for big arrays that are built once and then read for long (a
// planned program, an SSA graph's nodes, kernel contexts). On Linux with
// transparent huge pages in "madvise" mode, memory is faulted in one 4 KB
// page at a time unless it is advised otherwise; on the 2-core VM of issue 19
// each such fault cost about 21 us (64 MB first touched in 350 ms; 6 ms with
// huge pages), so building a 100k-op graph spent most of its time there.
//
//   std::vector<Node> nodes;
//   nodes.reserve(n);                                   // not yet touched
//   AdviseHugePages(nodes.data(), n * sizeof(Node));    // before the first write
//
// Everything here is a hint: where the kernel has no transparent huge pages,
// or off Linux, memory works as usual. Thread-safe.
#pragma once

#include <cstddef>

namespace rill {

// The size of a huge page (x86-64, arm64 with 4 KB base pages).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Asks the kernel to back the huge-page-aligned part of [data, data + bytes)
// with huge pages when it is first touched. Does nothing under 4 MB (too
// little to gain) and for memory already touched (it keeps its pages).
void AdviseHugePages(const void* data, size_t bytes);

// Blocks for a protobuf arena (ArenaOptions::block_alloc / block_dealloc):
// blocks of kHugePageBytes or more are their own mappings, advised as above;
// smaller ones come from the heap. Throws std::bad_alloc when out of memory.
void* AllocateHugePageBlock(size_t bytes);
void FreeHugePageBlock(void* block, size_t bytes);

}  // namespace rill
