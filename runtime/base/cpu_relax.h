// CpuRelax: one pause in a spin-wait loop (x86's `pause`, which lets the
// sibling hyperthread run and saves power; elsewhere a yield).
#pragma once

#include <thread>

namespace rill {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace rill
