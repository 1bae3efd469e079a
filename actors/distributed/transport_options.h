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
  // The largest frames, the handshake's and an idle connection's deadlines,
  // how many incoming connections (rill/wire_limits.h): a server's and a
  // trainer's come from their flags (--max-message-mb, --idle-timeout-ms, ...).
  WireLimits limits;

  // The decoder's part of `limits`.
  FrameLimits frame_limits() const { return {limits.max_message_bytes, limits.max_meta_bytes}; }
};

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
