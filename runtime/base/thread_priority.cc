#include "runtime/base/thread_priority.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace rill {

void LowerCurrentThreadPriority(int increment) {
#if defined(__linux__)
  if (increment <= 0) return;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  setpriority(PRIO_PROCESS, tid, now + increment);  // a hint: may fail
#else
  (void)increment;
#endif
}

}  // namespace rill
