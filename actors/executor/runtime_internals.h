// What the library's own code reaches of a Runtime and users do not: the CAF
// actor system its actors live in, and its fiber pool. Not part of the
// public API (<rill/runtime.h> names no CAF type).
#pragma once

#include "rill/runtime.h"

namespace caf {
class actor_system;
}

namespace rill {

class FiberPool;

caf::actor_system& ActorSystemOf(Runtime& runtime);
// The fiber pool, started on the first call.
FiberPool& FiberPoolOf(Runtime& runtime);

}  // namespace rill
