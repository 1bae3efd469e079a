// Endpoints and connections between Rill processes, over CAF's network layer
// (the middleman: construct the Runtime with network = true). A server
// publishes its actor on HOST:PORT; a client connects and gets a handle to
// send (wire_atom, bytes) to (actors/distributed/wire_atom.h).
//
//   Runtime runtime(2, 1, /*network=*/true);
//   uint16_t port = Publish(ActorSystemOf(runtime), server, ParseEndpoint("0.0.0.0:7164"));
//   caf::actor remote = Connect(ActorSystemOf(runtime), ParseEndpoint("10.0.0.1:7164"), 10s);
//
// Publish and Connect block their caller: call them from a plain thread (or a
// detached actor), never from an event-based actor's handler.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "rill/endpoint.h"

namespace caf {
class actor;
class actor_system;
}  // namespace caf

namespace rill {

// Publishes `actor` on `endpoint` (its host picks the interface: "0.0.0.0"
// for all of them; port 0 picks a free port) and returns the port bound.
// Throws kIo naming the endpoint when the port cannot be bound, and
// kInvalidArgument when the system has no middleman. A published actor never becomes unreachable:
// send it an exit message before its actor system is destroyed.
uint16_t Publish(caf::actor_system& system, const caf::actor& actor, const Endpoint& endpoint);

// Connects to the actor published at `endpoint`. Refused or failed attempts
// (a server still starting) are retried until `timeout` has passed; then
// throws kUnavailable naming the endpoint and the last failure. Throws
// kNotFound when a node answers there but publishes no actor,
// kInvalidArgument when the system has no middleman.
caf::actor Connect(caf::actor_system& system, const Endpoint& endpoint,
                   std::chrono::milliseconds timeout);

}  // namespace rill
