// The CAF message that carries wire bytes between processes:
// (wire_atom, std::string), the string an EncodeWire result (actors/distributed/wire.h):
// net_latency's comparison with CAF's wire and the tests of network.h use it.
// Both are types CAF serializes without registration.
#pragma once

#include <caf/atom.hpp>

namespace rill {

using wire_atom = caf::atom_constant<caf::atom("rill_wire")>;

}  // namespace rill
