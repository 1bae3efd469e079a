// WireLimits: what a Rill process accepts from a peer.
#pragma once

#include <chrono>
#include <cstddef>

namespace rill {

struct WireLimits {
  // Larger messages are rejected: on Rill's transport from the frame's fixed
  // header, before anything is allocated (DecodeWire checks a message given
  // as bytes the same way).
  size_t max_message_bytes = 256u << 20;

  // The transport's (actors/distributed/distributed.md, "Transport"). A
  // frame's message without its tensor.
  size_t max_meta_bytes = 16u << 20;
  // From accept to the end of the handshake.
  std::chrono::milliseconds handshake_timeout{5000};
  // An open connection on which nothing arrives for this long is closed.
  std::chrono::milliseconds idle_timeout{60000};
  // Incoming connections in all, per remote address, and in their handshake
  // per remote address; beyond them a new connection is closed at once.
  int max_connections = 256;
  int max_connections_per_address = 64;
  int max_handshakes_per_address = 8;
};

}  // namespace rill
