// Lowers the calling thread's scheduling priority: for helper threads (an
// input pipeline's decoders, a gatherer of preloaded batches) that should run
// in the gaps the threads computing leave, not take a core from one of them.
// On Linux a thread's nice value is its own (setpriority on its thread id); a
// thread may always lower its own priority. Elsewhere, and when the call
// fails, nothing changes: it is a hint. Thread-safe.
#pragma once

namespace rill {

// Raises the calling thread's nice value by `increment` (0: no change).
void LowerCurrentThreadPriority(int increment);

}  // namespace rill
