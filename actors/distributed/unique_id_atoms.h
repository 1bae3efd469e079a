// The messages of the unique-id exchange (rill/unique_id_exchange.h):
//   node k -> node 0: (uid_get_atom, int32_t k)
//   node 0 -> node k: (uid_atom, std::string bytes)
//   node k -> node 0: (uid_ack_atom, int32_t k)
#pragma once

#include <caf/atom.hpp>

namespace rill {

using uid_get_atom = caf::atom_constant<caf::atom("rill_uidq")>;
using uid_atom = caf::atom_constant<caf::atom("rill_uid")>;
using uid_ack_atom = caf::atom_constant<caf::atom("rill_uida")>;

}  // namespace rill
