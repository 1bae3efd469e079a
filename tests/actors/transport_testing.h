// Helpers for the transport's tests: an inbox that the transport's callbacks
// fill, an echo server, and a raw socket that behaves as a careless or
// hostile peer would. Every wait takes a timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actors/distributed/frame_decoder.h"
#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/transport.h"
#include "tests/testing/captured_log.h"

namespace rill::testing {

using namespace std::chrono_literals;

constexpr char kToken[] = "the job's token";

// Options for tests: the token above and short deadlines.
TransportOptions TestTransportOptions();

// What a transport's callbacks delivered, for a test thread to wait on.
class Inbox {
 public:
  TransportCallbacks Callbacks();
  std::optional<std::pair<ConnectionId, ReceivedFrame>> PopFrame(std::chrono::milliseconds timeout);
  std::optional<PeerInfo> PopOpen(std::chrono::milliseconds timeout);
  std::optional<std::string> PopClose(std::chrono::milliseconds timeout);

 private:
  template <class T>
  std::optional<T> Pop(std::deque<T>& queue, std::chrono::milliseconds timeout);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<ConnectionId, ReceivedFrame>> frames_;
  std::deque<PeerInfo> opens_;
  std::deque<std::string> closes_;
};

// Answers every message frame with a VALUE of the same var, step + 1 and the same payload.
class EchoServer {
 public:
  explicit EchoServer(TransportOptions options = TestTransportOptions());
  uint16_t port() const { return port_; }
  Transport& transport() { return *transport_; }

 private:
  std::unique_ptr<Transport> transport_;
  uint16_t port_ = 0;
};

// Connects a fresh client to 127.0.0.1:port, sends a float32 tensor and
// checks that the echo comes back with the same bytes (gtest failures
// otherwise). True when it did.
bool EchoesATensor(uint16_t port);

// Waits until `condition` holds, checking every few ms, at most `timeout`.
template <class Condition>
bool WaitFor(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// A plain TCP client on loopback, for sending what a Rill peer never would.
class RawSocket {
 public:
  explicit RawSocket(uint16_t port);  // connects; check connected()
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool Write(const void* data, size_t size);
  bool Write(const std::vector<uint8_t>& bytes) { return Write(bytes.data(), bytes.size()); }
  // Reads exactly `size` bytes; false on close, error or timeout.
  bool ReadExactly(void* out, size_t size, std::chrono::milliseconds timeout);
  // True when the server closes the connection within `timeout` (bytes it
  // sends before are skipped).
  bool ClosedByPeerWithin(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
};

// Opens a connection as a trainer that holds `token` (the handshake by hand).
// True when the server proved the same token.
bool RawHandshake(RawSocket& socket, const std::string& token);

// Resident memory of this process in bytes (from /proc/self/statm).
size_t ResidentBytes();

// The log of a test, kept out of the test's output while it lives.
struct QuietLog {
  CapturedLog log;
  QuietLog() { SetLogSink(log.Sink()); }
  ~QuietLog() { SetLogSink(nullptr); }
};

// Appends `text`'s bytes (resize and copy: g++ 12 reports a false
// -Warray-bounds for vector::insert of a string's range here).
void Append(std::vector<uint8_t>& bytes, const std::string& text);

// The encoded fixed header of a frame of `kind` claiming these sizes.
std::vector<uint8_t> HeaderBytes(uint16_t kind, uint32_t meta, uint64_t payload);

// The bytes a connection writes for `frame`: its head, then its payload or its
// bundle's parts, each padded with zeros to whole words.
std::vector<uint8_t> FrameBytes(const OutgoingFrame& frame);

// Feeds `bytes` to `decoder` `step` bytes at a time (at most what it asks
// for); the frames stay in the decoder (TakeFrames).
void Feed(FrameDecoder& decoder, const std::vector<uint8_t>& bytes, size_t step);
std::vector<ReceivedFrame> TakeFrames(FrameDecoder& decoder);

// A tensor of `dtype` x `shape` whose values depend on their index and `seed`.
Tensor Ramp(DataType dtype, const Shape& shape, int seed = 0);
bool SameBytes(const Tensor& a, const Tensor& b);

}  // namespace rill::testing
