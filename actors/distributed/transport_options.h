// What a transport accepts and how long it waits (actors/distributed/distributed.md,
// "Transport"), what it reports, and the callbacks through which it hands
// frames to its owner. Plain values.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "actors/distributed/frame_decoder.h"
#include "actors/distributed/frame_header.h"
#include "actors/distributed/handshake.h"
#include "rill/wire_limits.h"

namespace rill {

struct TransportOptions {
  // The job's token. Both ends prove they hold it (HMAC over a nonce); it is
  // never sent. An empty token still works, and then proves nothing.
  std::string token;
  FrameLimits frame_limits;
  // From accept to the end of the handshake; then the connection is closed.
  std::chrono::milliseconds handshake_timeout{5000};
  // An open connection on which nothing arrives for this long is closed
  // (peers send heartbeats far more often). A large payload is read in
  // batches of 256 KB (or its rest): it must arrive at least that fast.
  std::chrono::milliseconds idle_timeout{60000};
  // Incoming connections, open or in their handshake, in all and per remote
  // address; and those in their handshake per remote address. Beyond them a
  // new connection is closed at once.
  int max_connections = 256;
  int max_connections_per_address = 64;
  int max_handshakes_per_address = 8;
};

// The options of a server's or trainer's transport: the job's token and the
// limits its flags set (--max-message-mb, --handshake-timeout-ms, ...).
inline TransportOptions TransportOptionsFor(const std::string& token, const WireLimits& limits) {
  TransportOptions options;
  options.token = token;
  options.frame_limits.max_message_bytes = limits.max_message_bytes;
  options.frame_limits.max_meta_bytes = limits.max_meta_bytes;
  options.handshake_timeout = limits.handshake_timeout;
  options.idle_timeout = limits.idle_timeout;
  options.max_connections = limits.max_connections;
  options.max_connections_per_address = limits.max_connections_per_address;
  options.max_handshakes_per_address = limits.max_handshakes_per_address;
  return options;
}

using ConnectionId = uint64_t;

// Who is at the other end of an open connection.
struct PeerInfo {
  // Incoming: the role and id the peer announced (and proved with the token).
  // Outgoing: default (a server announces nothing; the address names it).
  Hello hello;
  std::string address;  // "ip:port"
  bool incoming = false;
};

// Called on the transport's thread, one at a time; they must not block (nor
// call Transport::Connect). Send and Close may be called from them.
struct TransportCallbacks {
  std::function<void(ConnectionId, const PeerInfo&)> on_open;
  // Message frames and heartbeats (kind kHeartbeat, nothing in them).
  std::function<void(ConnectionId, ReceivedFrame)> on_frame;
  // For connections that were open; `why` names the peer and the cause.
  std::function<void(ConnectionId, const std::string& why)> on_close;
  // Where the payload of a frame goes (see FrameDecoder::Destination); unset:
  // the decoder allocates.
  std::function<Tensor(ConnectionId, const proto::WireMessage&)> destination;
};

// Counts since the transport started; read from any thread.
struct TransportStats {
  std::atomic<int64_t> open{0};               // open connections now
  std::atomic<int64_t> handshaking{0};        // incoming connections in their handshake now
  std::atomic<int64_t> accepted{0};           // incoming connections accepted
  std::atomic<int64_t> refused_at_limit{0};   // closed at once: a connection cap was reached
  std::atomic<int64_t> failed_handshakes{0};  // wrong hello, wrong MAC, deadline passed
  std::atomic<int64_t> bad_frames{0};         // closed for a frame that broke the rules
  std::atomic<int64_t> idle_closed{0};        // closed after idle_timeout
  std::atomic<int64_t> frames_received{0};    // message frames handed to on_frame
};

}  // namespace rill
