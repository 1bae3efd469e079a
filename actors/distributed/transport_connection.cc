#include "actors/distributed/transport_connection.h"

#include <boost/asio/completion_condition.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <utility>
#include <vector>

#include "rill/error.h"
#include "rill/log.h"

namespace rill {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::string RemoteAddress(const asio::ip::tcp::socket& socket) {
  error_code error;
  const auto endpoint = socket.remote_endpoint(error);
  if (error) return "an unknown address";
  const std::string host = endpoint.address().to_string();
  return StrCat(endpoint.address().is_v6() ? "[" + host + "]" : host, ":", endpoint.port());
}

const char* RoleName(PeerRole role) {
  switch (role) {
    case PeerRole::kTrainer: return "trainer";
    case PeerRole::kServer: return "server";
    case PeerRole::kTool: return "tool";
    case PeerRole::kRank: return "rank";
  }
  return "peer";
}

// Frames gathered into one write: a few large writes rather than many small ones.
constexpr size_t kMaxFramesPerWrite = 64;
// The zeros that pad a bundle's parts to whole words.
constexpr uint8_t kBundlePadding[kBundleAlignment] = {};
// Per open connection: reads of small frame parts go here first.
constexpr size_t kStagingBytes = 32 << 10;
// A read straight into a tensor completes after at least this much (or the rest).
constexpr size_t kDirectReadBatch = 256 << 10;

}  // namespace

Connection::Connection(ConnectionOwner& owner, asio::ip::tcp::socket socket, ConnectionId id,
                       bool incoming)
    : owner_(owner),
      socket_(std::move(socket)),
      deadline_(socket_.get_executor()),
      id_(id),
      incoming_(incoming) {
  peer_.address = RemoteAddress(socket_);
  peer_.incoming = incoming;
  error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
}

std::string Connection::Describe() const {
  // An outgoing connection's peer (a server) says nothing about itself.
  if (!open_ || !incoming_) return peer_.address;
  return StrCat(RoleName(peer_.hello.role), " ", peer_.hello.id, " at ", peer_.address);
}

// -- handshake, server side ---------------------------------------------------

void Connection::StartServer() {
  StartDeadline(owner_.options().limits.handshake_timeout, "its handshake");
  asio::async_read(socket_, asio::buffer(hello_bytes_),
                   [self = shared_from_this()](const error_code& error, size_t) {
                     if (self->closed_) return;
                     if (error) return self->FailHandshake("closed before its hello");
                     self->OnHello();
                   });
}

void Connection::OnHello() {
  try {
    peer_.hello = DecodeHello(hello_bytes_, peer_.address);
  } catch (const Error& error) {
    return FailHandshake(error.message());
  }
  FillRandom(challenge_.data(), challenge_.size());
  asio::async_write(socket_, asio::buffer(challenge_),
                    [self = shared_from_this()](const error_code& error, size_t) {
                      if (self->closed_) return;
                      if (error) return self->FailHandshake("closed before our challenge left");
                      asio::async_read(
                          self->socket_, asio::buffer(self->mac_in_),
                          [self](const error_code& read_error, size_t) {
                            if (self->closed_) return;
                            if (read_error) {
                              return self->FailHandshake("closed before answering our challenge");
                            }
                            self->OnClientMac();
                          });
                    });
}

void Connection::OnClientMac() {
  const std::string& token = owner_.options().token;
  if (!SameMac(mac_in_, HandshakeMac(token, MacSide::kClient, hello_bytes_, challenge_))) {
    return FailHandshake("answered our challenge wrongly: it does not hold the job's token");
  }
  mac_out_ = HandshakeMac(token, MacSide::kServer, hello_bytes_, challenge_);
  asio::async_write(socket_, asio::buffer(mac_out_),
                    [self = shared_from_this()](const error_code& error, size_t) {
                      if (self->closed_) return;
                      if (error) return self->FailHandshake("closed before our answer left");
                      self->Opened();
                    });
}

// -- handshake, client side ---------------------------------------------------

void Connection::StartClient(const Hello& hello, HandshakeDone done) {
  client_done_ = std::move(done);
  hello_bytes_ = EncodeHello(hello);
  StartDeadline(owner_.options().limits.handshake_timeout, "the handshake");
  asio::async_write(socket_, asio::buffer(hello_bytes_),
                    [self = shared_from_this()](const error_code& error, size_t) {
                      if (self->closed_) return;
                      if (error) return self->FailHandshake("closed before our hello left");
                      asio::async_read(self->socket_, asio::buffer(self->challenge_),
                                       [self](const error_code& read_error, size_t) {
                                         if (self->closed_) return;
                                         if (read_error) {
                                           return self->FailHandshake(
                                               "closed without a challenge (at its connection "
                                               "limit, or not a Rill transport)");
                                         }
                                         self->SendChallengeAnswer();
                                       });
                    });
}

void Connection::SendChallengeAnswer() {
  mac_out_ = HandshakeMac(owner_.options().token, MacSide::kClient, hello_bytes_, challenge_);
  asio::async_write(socket_, asio::buffer(mac_out_),
                    [self = shared_from_this()](const error_code& error, size_t) {
                      if (self->closed_) return;
                      if (error) return self->FailHandshake("closed before our answer left");
                      self->mac_sent_ = true;
                      asio::async_read(self->socket_, asio::buffer(self->mac_in_),
                                       [self](const error_code& read_error, size_t) {
                                         if (self->closed_) return;
                                         if (read_error) {
                                           self->token_refused_ = true;
                                           return self->FailHandshake(
                                               "closed after our answer to its challenge: the "
                                               "job's tokens differ (--token, RILL_TOKEN)");
                                         }
                                         self->CheckServerMac();
                                       });
                    });
}

void Connection::CheckServerMac() {
  const Mac expected =
      HandshakeMac(owner_.options().token, MacSide::kServer, hello_bytes_, challenge_);
  if (!SameMac(mac_in_, expected)) {
    token_refused_ = true;
    return FailHandshake("proved no knowledge of the job's token (a wrong answer to our hello)");
  }
  Opened();
}

// -- open ---------------------------------------------------------------------

void Connection::Opened() {
  open_ = true;
  deadline_.cancel();
  staging_.resize(kStagingBytes);
  decoder_.emplace(owner_.options().frame_limits(), Describe(),
                   [this](const proto::WireMessage& message) {
                     const auto& destination = owner_.callbacks().destination;
                     return destination ? destination(id_, message) : Tensor();
                   });
  last_read_ = std::chrono::steady_clock::now();
  owner_.OnOpened(*this);
  if (client_done_) std::exchange(client_done_, nullptr)("");
  if (closed_) return;  // the owner closed it from on_open
  CheckIdle();
  ReadMore();
  if (!queue_.empty()) WriteQueued();
}

void Connection::StartDeadline(std::chrono::milliseconds timeout, const std::string& what) {
  deadline_.expires_after(timeout);
  deadline_.async_wait([self = shared_from_this(), timeout, what](const error_code& error) {
    if (error || self->closed_ || self->open_) return;
    self->FailHandshake(StrCat("did not complete ", what, " within ", timeout.count(), " ms"));
  });
}

void Connection::CheckIdle() {
  const auto idle = owner_.options().limits.idle_timeout;
  const auto silent = std::chrono::steady_clock::now() - last_read_;
  if (silent >= idle) {
    ++owner_.stats().idle_closed;
    return Close(StrCat(Describe(), " sent nothing for ", idle.count(), " ms"));
  }
  deadline_.expires_after(idle - silent + std::chrono::milliseconds(1));
  deadline_.async_wait([self = shared_from_this()](const error_code& error) {
    if (!error && !self->closed_) self->CheckIdle();
  });
}

// Small parts of frames (headers, metas, small payloads) are read into the
// staging buffer, several per read, and copied into the decoder; a part at
// least as large as the staging buffer is read straight into the decoder's
// buffer (a tensor's memory).
void Connection::ReadMore() {
  std::span<uint8_t> next;
  try {
    next = decoder_->NextBuffer();
  } catch (const std::exception& failure) {  // an allocation that failed
    return Close(StrCat("cannot receive from ", Describe(), ": ", failure.what()));
  }
  const bool staged = next.size() < staging_.size();
  if (staged) {
    socket_.async_read_some(asio::buffer(staging_),
                            [self = shared_from_this()](const error_code& error, size_t bytes) {
                              self->OnRead(error, bytes, true);
                            });
    return;
  }
  asio::async_read(socket_, asio::buffer(next.data(), next.size()),
                   asio::transfer_at_least(std::min(next.size(), kDirectReadBatch)),
                   [self = shared_from_this()](const error_code& error, size_t bytes) {
                     self->OnRead(error, bytes, false);
                   });
}

void Connection::OnRead(const error_code& error, size_t bytes, bool staged) {
  if (closed_) return;
  if (error) {
    return Close(error == asio::error::eof
                     ? StrCat(Describe(), " closed the connection")
                     : StrCat("connection to ", Describe(), " failed: ", error.message()));
  }
  last_read_ = std::chrono::steady_clock::now();
  size_t done = 0;
  do {
    size_t size = bytes - done;
    try {
      if (staged) {
        const std::span<uint8_t> next = decoder_->NextBuffer();
        size = std::min(size, next.size());
        std::memcpy(next.data(), staging_.data() + done, size);
      }
      decoder_->Commit(size);
    } catch (const Error& bad) {
      ++owner_.stats().bad_frames;
      return Close(bad.message());
    } catch (const std::exception& failure) {  // an allocation that failed
      return Close(StrCat("cannot receive from ", Describe(), ": ", failure.what()));
    }
    done += size;
    DeliverFrames();
    if (closed_) return;
  } while (done < bytes);
  ReadMore();
}

void Connection::DeliverFrames() {
  while (decoder_->HasFrame() && !closed_) {
    ReceivedFrame frame = decoder_->TakeFrame();
    // Heartbeats go to the owner too: they are how it knows the peer lives.
    if (frame.kind == FrameKind::kMessage) ++owner_.stats().frames_received;
    if (!owner_.callbacks().on_frame) continue;
    try {
      owner_.callbacks().on_frame(id_, std::move(frame));
    } catch (const std::exception& failure) {
      // The owner's failure, not the peer's: the connection goes on.
      Log(LogLevel::kError, "transport: handling a frame from ", Describe(),
          " failed: ", failure.what());
    }
  }
}

// -- writing ------------------------------------------------------------------

void Connection::Send(OutgoingFrame frame, Written written) {
  if (closed_) {
    if (written) written(false);
    return;
  }
  queue_.push_back(Pending{std::move(frame), std::move(written)});
  if (open_ && !writing_) WriteQueued();
}

void Connection::WriteQueued() {
  writing_ = true;
  in_flight_ = std::min(queue_.size(), kMaxFramesPerWrite);
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(2 * in_flight_);  // more for bundles
  for (size_t i = 0; i < in_flight_; ++i) {
    const OutgoingFrame& frame = queue_[i].frame;
    buffers.emplace_back(frame.head.data(), frame.head.size());
    if (frame.payload.initialized() && frame.payload.bytes() > 0) {
      buffers.emplace_back(frame.payload.raw_data(), frame.payload.bytes());
    }
    for (const Tensor& part : frame.bundle) {
      if (part.bytes() > 0) buffers.emplace_back(part.raw_data(), part.bytes());
      const size_t pad = (kBundleAlignment - part.bytes() % kBundleAlignment) % kBundleAlignment;
      if (pad > 0) buffers.emplace_back(kBundlePadding, pad);
    }
  }
  asio::async_write(socket_, buffers, [self = shared_from_this()](const error_code& error, size_t) {
    if (self->closed_) return;  // Close failed the queue
    for (size_t i = 0; i < self->in_flight_; ++i) {
      Pending done = std::move(self->queue_.front());
      self->queue_.pop_front();
      if (done.written) done.written(!error);
    }
    self->in_flight_ = 0;
    self->writing_ = false;
    if (error) {
      return self->Close(StrCat("writing to ", self->Describe(), " failed: ", error.message()));
    }
    if (!self->queue_.empty()) self->WriteQueued();
  });
}

// -- closing ------------------------------------------------------------------

void Connection::FailHandshake(const std::string& why) {
  ++owner_.stats().failed_handshakes;
  Close(StrCat(incoming_ ? "connection from " : "connection to ", peer_.address, " ", why));
}

void Connection::Close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  deadline_.cancel();
  std::deque<Pending> failed;
  failed.swap(queue_);
  for (Pending& pending : failed) {
    if (pending.written) pending.written(false);
  }
  owner_.OnClosed(*this, why);
  if (client_done_) std::exchange(client_done_, nullptr)(why);
}

}  // namespace rill
