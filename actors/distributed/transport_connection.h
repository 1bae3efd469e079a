// One TCP connection of a Transport, after accept or connect: the handshake
// (actors/distributed/handshake.h) under a deadline, then frames read through a
// FrameDecoder (small parts through a 32 KB staging buffer, several per read;
// large ones straight into their tensor, 256 KB or more per completed read)
// and frames written with
// scatter/gather writes from a queue.
//
// Every method runs on the transport's io thread (the owner posts to it); the
// connection is owned by a shared_ptr that its pending operations also hold,
// so it lives until the last of them completes after Close.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/distributed/frame_decoder.h"
#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/handshake.h"
#include "actors/distributed/transport_options.h"

namespace rill {

class Connection;

// What a connection tells the transport that owns it.
class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;
  virtual const TransportOptions& options() const = 0;
  virtual const TransportCallbacks& callbacks() const = 0;
  virtual TransportStats& stats() = 0;
  // The handshake succeeded (both directions).
  virtual void OnOpened(Connection& connection) = 0;
  // The connection closed (once), open or not.
  virtual void OnClosed(Connection& connection, const std::string& why) = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `done` of a client handshake: empty on success, else why it failed.
  using HandshakeDone = std::function<void(const std::string& failure)>;
  using Written = std::function<void(bool written)>;

  Connection(ConnectionOwner& owner, boost::asio::ip::tcp::socket socket, ConnectionId id,
             bool incoming);

  // Answers the hello of the peer that connected (incoming connections).
  void StartServer();
  // Sends `hello` and proves the token (outgoing connections).
  void StartClient(const Hello& hello, HandshakeDone done);

  // Queues `frame`; `written` (optional) runs once it left or failed.
  void Send(OutgoingFrame frame, Written written);
  // Closes at once; pending writes fail. `why` goes to on_close.
  void Close(const std::string& why);

  ConnectionId id() const { return id_; }
  bool incoming() const { return incoming_; }
  bool open() const { return open_; }
  // Client: the handshake failed over the token (retrying will not help).
  bool token_refused() const { return token_refused_; }
  const PeerInfo& peer() const { return peer_; }
  // "trainer 1 at 127.0.0.1:5000" for an open incoming connection, else the address.
  std::string Describe() const;

 private:
  struct Pending {
    OutgoingFrame frame;
    Written written;
  };

  void OnHello();
  void OnClientMac();
  void SendChallengeAnswer();
  void CheckServerMac();
  void Opened();
  void StartDeadline(std::chrono::milliseconds timeout, const std::string& what);
  void CheckIdle();
  void ReadMore();
  void OnRead(const boost::system::error_code& error, size_t bytes, bool staged);
  void DeliverFrames();
  void WriteQueued();
  void FailHandshake(const std::string& why);

  ConnectionOwner& owner_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer deadline_;  // the handshake's, then the idle check's
  ConnectionId id_;
  bool incoming_;
  bool open_ = false;
  bool closed_ = false;
  bool writing_ = false;
  bool mac_sent_ = false;       // client: our answer left; a close now means a wrong token
  bool token_refused_ = false;  // client: the server refused our token or failed to prove its own
  PeerInfo peer_;
  HelloBytes hello_bytes_{};
  Nonce challenge_{};
  Mac mac_in_{};
  Mac mac_out_{};
  HandshakeDone client_done_;
  std::optional<FrameDecoder> decoder_;  // from the end of the handshake
  std::vector<uint8_t> staging_;         // from the end of the handshake
  std::chrono::steady_clock::time_point last_read_;
  std::deque<Pending> queue_;
  size_t in_flight_ = 0;  // frames at the queue's front being written
};

}  // namespace rill
