// The messages Rill's actors exchange through CAF. Inside one process most
// readiness travels as a Countdown arrival instead (see countdown.h); these
// are for what must wake an actor or cross a boundary.
#pragma once

#include <caf/atom.hpp>

namespace rill {

// To a stream actor: there are tasks in your inbox and nobody is draining it.
using wake_atom = caf::atom_constant<caf::atom("wake")>;
// To the watchdog: time to look at the iterations in flight.
using tick_atom = caf::atom_constant<caf::atom("tick")>;
// To a custom op actor's host: the op's inputs are ready, in the iteration
// (int32 slot, uint32 generation) of the actor graph; with the node (int32):
//   (run_op_atom, int32_t slot, int32_t node, uint32_t generation)
using run_op_atom = caf::atom_constant<caf::atom("runop")>;

}  // namespace rill
