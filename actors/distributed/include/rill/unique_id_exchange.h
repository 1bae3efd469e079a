// Hands one opaque byte string (the NCCL unique id) from node 0 to every other
// node of a multi-node job, before ncclCommInitRank, over Rill's transport:
// node 0 holds a rendezvous store (actors/distributed/rendezvous_store.h) on an
// endpoint, and every connection proves the job's token in its handshake
// before a frame is read. Nothing here knows about NCCL or a GPU.
//
//   // node 0
//   ncclUniqueId id;
//   ncclGetUniqueId(&id);
//   ServeUniqueId(ParseEndpoint("0.0.0.0:7170"), token,
//                 std::string(reinterpret_cast<const char*>(&id), sizeof(id)), nodes, 60s);
//   ncclCommInitRank(&comm, world, id, rank);
//
//   // node k
//   const std::string bytes =
//       FetchUniqueId(ParseEndpoint("10.0.0.1:7170"), token, k, 60s, sizeof(ncclUniqueId));
//   ncclUniqueId id;
//   std::memcpy(&id, bytes.data(), sizeof(id));   // FetchUniqueId checked the size
//   ncclCommInitRank(&comm, world, id, rank);
//
// Node k connects to node 0's store as rank k (node 0 refuses a node out of
// range, or one whose number is already connected: two processes given one
// rank), reads the id's key and, once the id passed the size check, sets its
// acknowledgement key. ServeUniqueId returns once every other node has
// acknowledged, so every node holds the bytes.
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

namespace rill {

// The largest id served or accepted (an ncclUniqueId is 128 bytes).
constexpr size_t kMaxUniqueIdBytes = 4096;

// Node 0: listens on `endpoint` (port 0: any free port), gives `id` to nodes
// 1 to nodes - 1 that prove `token`, and returns once each of them has
// acknowledged it; `on_published`, when given, is called with the bound port
// as soon as it listens (before waiting; from the calling thread). It stops
// listening before returning, whether or not it succeeded. With nodes == 1
// there is nobody to serve: returns at once, listening nowhere. Throws
// kInvalidArgument for an empty id, one over kMaxUniqueIdBytes, or nodes < 1;
// kIo when the endpoint cannot be bound; kTimeout naming the endpoint and the
// nodes whose acknowledgement is missing when `timeout` (counted from the
// call) passes first.
void ServeUniqueId(const Endpoint& endpoint, const std::string& token, const std::string& id,
                   int nodes, std::chrono::milliseconds timeout,
                   const std::function<void(uint16_t port)>& on_published = {});

// Node `node` (>= 1): connects to node 0 at `endpoint` with `token` (retrying
// while it is not up yet), reads the id, acknowledges it and returns it.
// Every wait together is bounded by `timeout`. The id must be non-empty and
// at most kMaxUniqueIdBytes; with `expected_size` > 0 it must be exactly that
// long (sizeof(ncclUniqueId) for NCCL). Every error names the node and the
// endpoint: kUnavailable when it cannot be reached, the tokens differ, or node
// 0 refuses the node; kTimeout when the id does not come in time;
// kInvalidArgument for node < 1 or an id of the wrong size (then no
// acknowledgement is sent, and node 0 times out naming this node).
std::string FetchUniqueId(const Endpoint& endpoint, const std::string& token, int node,
                          std::chrono::milliseconds timeout, size_t expected_size = 0);

}  // namespace rill
