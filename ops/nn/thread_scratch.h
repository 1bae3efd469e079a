// ThreadScratch: a grow-only buffer per thread for a kernel's temporaries.
// Kernels of different ops run concurrently on the executor's threads, and a
// steady-state step should not allocate, so each thread keeps its own buffer,
// one per element type and Tag (a type naming the use: two uses that are
// alive at once on a thread need different tags). Big buffers are on huge
// pages (huge_pages.h: a step sweeps them).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/base/huge_pages.h"

namespace rill {

// At least `elements` values of T, kept until this thread asks again with the
// same T and Tag; the contents are whatever the last use left.
template <class T, class Tag>
T* ThreadScratch(int64_t elements) {
  thread_local std::vector<T, HugePageAllocator<T>> buffer;
  if (buffer.size() < static_cast<size_t>(elements)) buffer.resize(static_cast<size_t>(elements));
  return buffer.data();
}

}  // namespace rill
