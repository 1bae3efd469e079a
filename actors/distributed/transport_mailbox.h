// TransportCallbacks that turn a transport's events into messages to a CAF
// actor, so that an actor (a parameter server, a trainer's link) drives the
// connections: it handles
//
//   (transport_open_atom, ConnectionId, PeerInfo)       after a handshake
//   (transport_frame_atom, ConnectionId, ReceivedFrame)  each message frame
//   (transport_close_atom, ConnectionId, std::string)    an open connection closed, and why
//
// and answers with Transport::Send from its handlers (it never blocks). The
// frames' tensors move into the message: no copy of their bytes. These
// messages never leave the process (CAF_ALLOW_UNSAFE_MESSAGE_TYPE below).
// The callbacks may run on the transport's thread while the actor runs
// elsewhere; they only enqueue.
#pragma once

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include "actors/distributed/transport_options.h"

namespace rill {

using transport_open_atom = caf::atom_constant<caf::atom("rill_topen")>;
using transport_frame_atom = caf::atom_constant<caf::atom("rill_tfram")>;
using transport_close_atom = caf::atom_constant<caf::atom("rill_tclos")>;

// Callbacks delivering to `actor` (and, when `destination` is set, naming
// payload destinations through it, on the transport's thread).
TransportCallbacks CallbacksToActor(
    caf::actor actor,
    std::function<Tensor(ConnectionId, const proto::WireMessage&)> destination = {});

}  // namespace rill

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(rill::ReceivedFrame)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(rill::PeerInfo)
