// Transport: Rill's own connections between processes (actors/distributed/distributed.md,
// "Transport"). Boost.Asio on one thread of its own moves the bytes; whoever
// owns the transport (an actor, a test) gets frames through callbacks.
//
//   TransportOptions options;
//   options.token = job_token;
//   Transport server(options, {.on_frame = [](ConnectionId from, ReceivedFrame frame) {...}});
//   uint16_t port = server.Listen(ParseEndpoint("127.0.0.1:0"));
//
//   Transport client(options, {});
//   ConnectionId to = client.Connect(ParseEndpoint(StrCat("127.0.0.1:", port)),
//                                    Hello{PeerRole::kTrainer, 1}, 10s);
//   client.Send(to, EncodeMessageFrame(message, gradient));  // gradient's bytes written from its
//   buffer
//
// Thread-safety: Listen, Connect, Send, Close and stats may be called from any
// thread; Connect blocks (never call it from a callback or an actor's
// handler). Callbacks run on the transport's thread, one at a time. Destroy a
// transport from another thread than its own (never from a callback): the
// destructor joins that thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/transport_options.h"
#include "rill/endpoint.h"

namespace rill {

class Transport {
 public:
  Transport(TransportOptions options, TransportCallbacks callbacks);
  // Closes every connection and the listener, then joins the thread.
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Listens on `endpoint` (port 0: any free port) and returns the port bound.
  // Throws kIo naming the endpoint when it cannot bind, kInvalidArgument when
  // this transport already listens.
  uint16_t Listen(const Endpoint& endpoint);

  // Connects to a transport listening at `endpoint` and completes the
  // handshake as `hello`. Refused attempts (a server still starting, or at its
  // connection limit) are retried until `timeout`, then throws kUnavailable
  // naming the endpoint and the last failure; a server that rejects our
  // token, or fails to prove its own, throws kUnavailable at once.
  ConnectionId Connect(const Endpoint& endpoint, const Hello& hello,
                       std::chrono::milliseconds timeout);

  // Queues `frame` on the connection. The payload tensor's bytes are read
  // after Send returns: leave them unchanged until `written` runs (true: the
  // frame left; false: the connection closed first). Unknown connections run
  // `written(false)`.
  void Send(ConnectionId connection, OutgoingFrame frame,
            std::function<void(bool written)> written = {});

  void Close(ConnectionId connection);

  const TransportStats& stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill
