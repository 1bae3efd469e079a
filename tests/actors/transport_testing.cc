#include "tests/actors/transport_testing.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <thread>

#include "actors/distributed/frame_header.h"
#include "actors/distributed/handshake.h"
#include "rill/endpoint.h"
#include "rill/error.h"

namespace rill::testing {

TransportOptions TestTransportOptions() {
  TransportOptions options;
  options.token = kToken;
  options.limits.handshake_timeout = 2s;
  options.limits.idle_timeout = 10s;
  return options;
}

TransportCallbacks Inbox::Callbacks() {
  TransportCallbacks callbacks;
  callbacks.on_frame = [this](ConnectionId from, ReceivedFrame frame) {
    std::lock_guard<std::mutex> lock(mutex_);
    frames_.emplace_back(from, std::move(frame));
    changed_.notify_all();
  };
  callbacks.on_open = [this](ConnectionId, const PeerInfo& peer) {
    std::lock_guard<std::mutex> lock(mutex_);
    opens_.push_back(peer);
    changed_.notify_all();
  };
  callbacks.on_close = [this](ConnectionId, const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    closes_.push_back(why);
    changed_.notify_all();
  };
  return callbacks;
}

template <class T>
std::optional<T> Inbox::Pop(std::deque<T>& queue, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return !queue.empty(); })) return std::nullopt;
  T item = std::move(queue.front());
  queue.pop_front();
  return item;
}

std::optional<std::pair<ConnectionId, ReceivedFrame>> Inbox::PopFrame(
    std::chrono::milliseconds timeout) {
  return Pop(frames_, timeout);
}
std::optional<PeerInfo> Inbox::PopOpen(std::chrono::milliseconds timeout) {
  return Pop(opens_, timeout);
}
std::optional<std::string> Inbox::PopClose(std::chrono::milliseconds timeout) {
  return Pop(closes_, timeout);
}

EchoServer::EchoServer(TransportOptions options) {
  auto self = std::make_shared<Transport*>(nullptr);
  TransportCallbacks callbacks;
  callbacks.on_frame = [self](ConnectionId from, ReceivedFrame frame) {
    if (frame.kind == FrameKind::kHeartbeat) return;
    proto::WireMessage reply = frame.message;
    reply.set_kind(proto::WireMessage::VALUE);
    reply.set_step(frame.message.step() + 1);
    if (frame.payload.initialized()) reply.clear_tensor();
    (*self)->Send(from, EncodeMessageFrame(std::move(reply), frame.payload));
  };
  transport_ = std::make_unique<Transport>(std::move(options), std::move(callbacks));
  *self = transport_.get();
  port_ = transport_->Listen(ParseEndpoint("127.0.0.1:0"));
}

bool EchoesATensor(uint16_t port) {
  Inbox inbox;
  Transport client(TestTransportOptions(), inbox.Callbacks());
  ConnectionId to = 0;
  try {
    to = client.Connect(ParseEndpoint(StrCat("127.0.0.1:", port)), Hello{PeerRole::kTrainer, 1, {}},
                        10s);
  } catch (const Error& error) {
    ADD_FAILURE() << "the server no longer serves: " << error.what();
    return false;
  }
  Tensor value(DataType::kFloat32, {257, 3});
  for (int64_t i = 0; i < value.numel(); ++i) value.mutable_data<float>()[i] = 0.5f * float(i);
  proto::WireMessage push;
  push.set_kind(proto::WireMessage::PUSH);
  push.set_var("w@GRAD");
  push.set_step(4);
  client.Send(to, EncodeMessageFrame(push, value));
  auto reply = inbox.PopFrame(10s);
  if (!reply) {
    ADD_FAILURE() << "no echo within 10 s";
    return false;
  }
  const ReceivedFrame& frame = reply->second;
  EXPECT_EQ(frame.message.kind(), proto::WireMessage::VALUE);
  EXPECT_EQ(frame.message.step(), 5);
  if (!frame.payload.initialized() || frame.payload.shape() != value.shape() ||
      std::memcmp(frame.payload.raw_data(), value.raw_data(), value.bytes()) != 0) {
    ADD_FAILURE() << "the echo's payload differs from what was sent";
    return false;
  }
  return true;
}

RawSocket::RawSocket(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

RawSocket::~RawSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawSocket::Write(const void* data, size_t size) {
  const auto* at = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd_, at, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool RawSocket::ReadExactly(void* out, size_t size, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto* at = static_cast<uint8_t*>(out);
  while (size > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = ::recv(fd_, at, size, 0);
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool RawSocket::ClosedByPeerWithin(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  uint8_t skip[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = ::recv(fd_, skip, sizeof(skip), 0);
    if (n <= 0) return true;  // closed (0) or reset (< 0)
  }
}

bool RawHandshake(RawSocket& socket, const std::string& token) {
  Hello hello;
  FillRandom(hello.nonce.data(), hello.nonce.size());
  const HelloBytes hello_bytes = EncodeHello(hello);
  Nonce challenge{};
  Mac server_mac{};
  if (!socket.Write(hello_bytes.data(), hello_bytes.size()) ||
      !socket.ReadExactly(challenge.data(), challenge.size(), 10s)) {
    return false;
  }
  const Mac mac = HandshakeMac(token, MacSide::kClient, hello_bytes, challenge);
  if (!socket.Write(mac.data(), mac.size()) ||
      !socket.ReadExactly(server_mac.data(), server_mac.size(), 10s)) {
    return false;
  }
  return SameMac(server_mac, HandshakeMac(token, MacSide::kServer, hello_bytes, challenge));
}

size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

void Append(std::vector<uint8_t>& bytes, const std::string& text) {
  const size_t at = bytes.size();
  bytes.resize(at + text.size());
  std::memcpy(bytes.data() + at, text.data(), text.size());
}

std::vector<uint8_t> HeaderBytes(uint16_t kind, uint32_t meta, uint64_t payload) {
  FrameHeader header;
  header.kind = kind;
  header.meta_bytes = meta;
  header.payload_bytes = payload;
  const auto bytes = EncodeFrameHeader(header);
  return {bytes.begin(), bytes.end()};
}

std::vector<uint8_t> FrameBytes(const OutgoingFrame& frame) {
  std::vector<uint8_t> bytes(frame.head.begin(), frame.head.end());
  auto append = [&bytes](const Tensor& t) {
    const auto* data = static_cast<const uint8_t*>(t.raw_data());
    bytes.insert(bytes.end(), data, data + t.bytes());
  };
  if (frame.payload.initialized()) append(frame.payload);
  for (const Tensor& part : frame.bundle) {
    append(part);
    bytes.resize(bytes.size() +
                 (kBundleAlignment - part.bytes() % kBundleAlignment) % kBundleAlignment);
  }
  return bytes;
}

void Feed(FrameDecoder& decoder, const std::vector<uint8_t>& bytes, size_t step) {
  size_t at = 0;
  while (at < bytes.size()) {
    const std::span<uint8_t> next = decoder.NextBuffer();
    ASSERT_FALSE(next.empty());
    const size_t n = std::min({step, next.size(), bytes.size() - at});
    std::memcpy(next.data(), bytes.data() + at, n);
    decoder.Commit(n);
    at += n;
  }
}

std::vector<ReceivedFrame> TakeFrames(FrameDecoder& decoder) {
  std::vector<ReceivedFrame> frames;
  while (decoder.HasFrame()) frames.push_back(decoder.TakeFrame());
  return frames;
}

Tensor Ramp(DataType dtype, const Shape& shape, int seed) {
  Tensor t(dtype, shape);
  VisitDataType(dtype, [&]<class T>() {
    T* x = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) x[i] = static_cast<T>((i * 7 + seed) % 1013) - T(500);
  });
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

}  // namespace rill::testing
