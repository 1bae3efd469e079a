// Hands one opaque byte string (the NCCL unique id) from node 0 to every other
// node of a multi-node job through the actor runtime's own messages, before
// ncclCommInitRank. Node 0 serves the bytes on an endpoint; node k (1 to
// nodes - 1) fetches them there. Nothing here knows about NCCL or a GPU.
//
//   // node 0                                     (Runtime constructed with network = true)
//   ncclUniqueId id;
//   ncclGetUniqueId(&id);
//   ServeUniqueId(runtime, ParseEndpoint("0.0.0.0:7170"),
//                 std::string(reinterpret_cast<const char*>(&id), sizeof(id)), nodes, 60s);
//   ncclCommInitRank(&comm, world, id, rank);
//
//   // node k
//   const std::string bytes = FetchUniqueId(runtime, ParseEndpoint("10.0.0.1:7170"),
//                                           k, 60s, sizeof(ncclUniqueId));
//   ncclUniqueId id;
//   std::memcpy(&id, bytes.data(), sizeof(id));   // FetchUniqueId checked the size
//   ncclCommInitRank(&comm, world, id, rank);
//
// The protocol, over CAF's middleman (actors/distributed/network.h):
//   node k -> node 0: (uid_get_atom, int32_t k)
//   node 0 -> node k: (uid_atom, std::string bytes), or an error for a node out of
//                     range or one that asked before (logged to node 0's log sink)
//   node k -> node 0: (uid_ack_atom, int32_t k), once the bytes passed the size check
// Node 0 counts a node as served at its acknowledgement, so ServeUniqueId
// returns only once every other node holds the bytes. Each node asks once: a
// second request naming the same node is refused (two processes given one rank).
//
// Both calls block their caller: call them from a plain thread, never from an
// event-based actor's handler.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "rill/endpoint.h"
#include "rill/runtime.h"

namespace rill {

// The largest id served or accepted (an ncclUniqueId is 128 bytes).
constexpr size_t kMaxUniqueIdBytes = 4096;

// Node 0: publishes an actor on `endpoint` (port 0: any free port) that gives
// `id` to nodes 1 to nodes - 1, and returns once each of them has acknowledged
// it; `on_published`, when given, is called with the bound port as soon as
// the actor is published (before waiting; from the calling thread). The actor
// is unpublished and stopped before returning, whether or not it succeeded.
// With nodes == 1 there is nobody to serve: returns at once, publishing nothing.
// Throws kInvalidArgument for an empty id, one over kMaxUniqueIdBytes, or
// nodes < 1; kIo when the endpoint cannot be bound (Publish); kTimeout naming
// the endpoint and the nodes still missing when `timeout` (counted from the
// call) passes first.
void ServeUniqueId(Runtime& runtime, const Endpoint& endpoint, const std::string& id, int nodes,
                   std::chrono::milliseconds timeout,
                   const std::function<void(uint16_t port)>& on_published = {});

// Node `node` (>= 1): connects to the server at `endpoint` (retrying while it
// is not up yet), asks for the id, acknowledges it and returns it. Every wait
// together is bounded by `timeout`. The id must be non-empty and at most
// kMaxUniqueIdBytes; with `expected_size` > 0 it must be exactly that long
// (sizeof(ncclUniqueId) for NCCL). Every error names the endpoint: kUnavailable
// when it cannot be reached or refuses the node, kTimeout when it does not answer
// in time, kInvalidArgument for node < 1 or a reply of the wrong size (then no
// acknowledgement is sent, and the server times out naming this node).
std::string FetchUniqueId(Runtime& runtime, const Endpoint& endpoint, int node,
                          std::chrono::milliseconds timeout, size_t expected_size = 0);

}  // namespace rill
