// Round-trip latency of one tensor message between two processes over
// loopback, for a 4 KB and a 4 MB float32 tensor. A child process publishes
// an echo actor (actors/distributed/network.h); the parent sends it a PUSH encoded with
// EncodeWire as (wire_atom, bytes) and waits for the answer: the child
// decodes the PUSH and answers a VALUE of the same tensor, which the parent
// decodes. Encoding and decoding on both sides are inside the timed trip.
// The same trip over Rill's own transport (actors/distributed/transport.h):
// a frame whose payload is written from the tensor's buffer, read by the
// child into a receive buffer it keeps and echoed from there, and read by the
// parent straight into a destination tensor (as a trainer's recv would, into
// its parameter).
// The baseline, in the same run: raw TCP ping-pong of the same bytes between
// the same two processes (no CAF, no decoding, TCP_NODELAY).
//
// Usage: net_latency [trips, default 100] [warm-up trips, default 10]
// Prints median and p90 per size and the ratios wire / raw and transport /
// raw of the medians. The three kinds of trip take turns, so that load from
// elsewhere on the machine falls on all three alike.
// Both processes run 2 CAF scheduler threads; the parent's requests come
// from a blocking scoped_actor, as a trainer thread's would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actors/distributed/network.h"
#include "actors/distributed/transport.h"
#include "actors/distributed/wire.h"
#include "actors/distributed/wire_atom.h"
#include "actors/executor/runtime_internals.h"
#include "rill/error.h"
#include "rill/runtime.h"

using namespace rill;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kSchedulerThreads = 2;

constexpr char kToken[] = "net_latency";

struct Ports {
  uint16_t wire = 0;       // the published echo actor
  uint16_t tcp = 0;        // the raw TCP echo
  uint16_t transport = 0;  // the transport's echo
};

// -- raw TCP ------------------------------------------------------------------

void WriteAll(int fd, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, bytes, size);
    RILL_CHECK(n > 0, kIo, "write to a socket failed: ", std::strerror(errno));
    bytes += n;
    size -= static_cast<size_t>(n);
  }
}

// False at end of stream before the first byte.
bool ReadAll(int fd, void* data, size_t size) {
  char* bytes = static_cast<char*>(data);
  for (size_t done = 0; done < size;) {
    const ssize_t n = read(fd, bytes + done, size - done);
    if (n == 0 && done == 0) return false;
    RILL_CHECK(n > 0, kIo, "read from a socket failed or ended mid-message");
    done += static_cast<size_t>(n);
  }
  return true;
}

void NoDelay(int fd) {
  const int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  return address;
}

// A message is its 8-byte length, then its bytes.
void SendFrame(int fd, const std::string& bytes) {
  const uint64_t size = bytes.size();
  WriteAll(fd, &size, sizeof(size));
  WriteAll(fd, bytes.data(), bytes.size());
}

bool ReceiveFrame(int fd, std::string* bytes) {
  uint64_t size = 0;
  if (!ReadAll(fd, &size, sizeof(size))) return false;
  bytes->resize(size);
  return ReadAll(fd, bytes->data(), size);
}

// -- the child: echo servers ----------------------------------------------------

// Decodes a PUSH and answers a VALUE of the same tensor.
// A class, not a function: CAF 0.17 spawns an argument-less function actor
// through a null shared_ptr<tuple<>> it dereferences (UBSan reports it).
class WireEcho : public caf::event_based_actor {
 public:
  using caf::event_based_actor::event_based_actor;
  caf::behavior make_behavior() override {
    return {[](wire_atom, const std::string& bytes) -> caf::result<wire_atom, std::string> {
      const proto::WireMessage push = DecodeWire(bytes, WireLimits{}, "the benchmark's parent");
      return {wire_atom::value, EncodeWire(WireValue(push.var(), push.step(), WireTensor(push)))};
    }};
  }
};

// Answers each message frame with a VALUE of the same payload, written back
// from the buffer it was read into: a tensor of the message's dtype and shape
// kept across trips, as a server keeps a receive buffer per gradient (trips
// are ping-pong, so a frame never lands in it while the echo is written).
std::unique_ptr<Transport> StartTransportEcho(uint16_t* port) {
  TransportOptions options;
  options.token = kToken;
  auto self = std::make_shared<Transport*>(nullptr);
  auto buffer = std::make_shared<Tensor>();
  TransportCallbacks callbacks;
  callbacks.destination = [buffer](ConnectionId, const proto::WireMessage& message) {
    const proto::TensorProto& t = message.tensor();
    const Shape shape(t.shape().begin(), t.shape().end());
    if (!buffer->initialized() || buffer->shape() != shape) {
      *buffer = Tensor(FromProto(t.dtype()), shape);
    }
    return *buffer;
  };
  callbacks.on_frame = [self](ConnectionId from, ReceivedFrame frame) {
    if (frame.kind == FrameKind::kHeartbeat) return;
    proto::WireMessage reply;
    reply.set_kind(proto::WireMessage::VALUE);
    reply.set_var(frame.message.var());
    reply.set_step(frame.message.step());
    (*self)->Send(from, EncodeMessageFrame(std::move(reply), frame.payload));
  };
  auto transport = std::make_unique<Transport>(options, callbacks);
  *self = transport.get();
  *port = transport->Listen(Endpoint{"127.0.0.1", 0});
  return transport;
}

// Serves the three echoes until the parent closes the TCP connection.
void ServeEchoes(int ports_fd) {
  Runtime runtime(kSchedulerThreads, 1, /*network=*/true);
  caf::actor echo = ActorSystemOf(runtime).spawn<WireEcho>();
  Ports ports;
  ports.wire = Publish(ActorSystemOf(runtime), echo, Endpoint{"127.0.0.1", 0});
  const std::unique_ptr<Transport> transport_echo = StartTransportEcho(&ports.transport);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = Loopback(0);
  socklen_t length = sizeof(address);
  RILL_CHECK(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                 listen(listener, 1) == 0 &&
                 getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0,
             kIo, "cannot listen on loopback: ", std::strerror(errno));
  ports.tcp = ntohs(address.sin_port);
  WriteAll(ports_fd, &ports, sizeof(ports));
  close(ports_fd);

  const int peer = accept(listener, nullptr, nullptr);
  RILL_CHECK(peer >= 0, kIo, "accept failed: ", std::strerror(errno));
  NoDelay(peer);
  std::string bytes;
  while (ReceiveFrame(peer, &bytes)) SendFrame(peer, bytes);
  close(peer);
  close(listener);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let BASP close the link
}

// -- the parent: measurements ---------------------------------------------------

struct Latency {
  double median_ms = 0;
  double p90_ms = 0;
};

// Runs the trips round-robin (one of each, `trips` times, after `warmup`
// rounds), so that load from elsewhere on the machine falls on all of them
// alike, and returns each one's latency.
std::vector<Latency> MeasureInterleaved(int trips, int warmup,
                                        const std::vector<std::function<void()>>& kinds) {
  for (int i = 0; i < warmup; ++i) {
    for (const auto& trip : kinds) trip();
  }
  std::vector<std::vector<double>> ms(kinds.size());
  for (int i = 0; i < trips; ++i) {
    for (size_t k = 0; k < kinds.size(); ++k) {
      const auto start = Clock::now();
      kinds[k]();
      ms[k].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  }
  std::vector<Latency> latencies;
  for (std::vector<double>& times : ms) {
    std::sort(times.begin(), times.end());
    latencies.push_back(
        {times[times.size() / 2], times[std::min(times.size() - 1, times.size() * 9 / 10)]});
  }
  return latencies;
}

Tensor Payload(int64_t bytes) {
  Tensor tensor(DataType::kFloat32, {bytes / 4});
  float* data = tensor.mutable_data<float>();
  for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = 0.001f * static_cast<float>(i);
  return tensor;
}

// The parent's end of the transport: each reply lands in `destination` and
// wakes the waiting thread, as a frame would wake a trainer's actor.
class TransportClient {
 public:
  explicit TransportClient(uint16_t port) {
    TransportOptions options;
    options.token = kToken;
    TransportCallbacks callbacks;
    callbacks.destination = [this](ConnectionId, const proto::WireMessage&) {
      return destination_;
    };
    callbacks.on_frame = [this](ConnectionId, ReceivedFrame frame) {
      std::lock_guard<std::mutex> lock(mutex_);
      reply_ = std::move(frame);
      replied_.notify_one();
    };
    transport_ = std::make_unique<Transport>(options, callbacks);
    to_ = transport_->Connect(Endpoint{"127.0.0.1", port}, Hello{PeerRole::kTrainer, 0, {}},
                              std::chrono::seconds(10));
  }

  void RoundTrip(const Tensor& value, Tensor destination, int64_t step) {
    destination_ = std::move(destination);
    proto::WireMessage push;
    push.set_kind(proto::WireMessage::PUSH);
    push.set_var("fc_0.w_0@GRAD");
    push.set_step(step);
    transport_->Send(to_, EncodeMessageFrame(std::move(push), value));
    std::unique_lock<std::mutex> lock(mutex_);
    RILL_CHECK(
        replied_.wait_for(lock, std::chrono::seconds(30), [&] { return reply_.has_value(); }),
        kTimeout, "no echo over the transport within 30 s");
    RILL_CHECK(
        reply_->payload.raw_data() == destination_.raw_data() && reply_->message.step() == step,
        kInternal, "the transport's echo did not land in its destination");
    reply_.reset();
  }

 private:
  std::unique_ptr<Transport> transport_;
  ConnectionId to_ = 0;
  Tensor destination_;  // set before each send; read on the transport's thread after
  std::mutex mutex_;
  std::condition_variable replied_;
  std::optional<ReceivedFrame> reply_;
};

int RunParent(const Ports& ports, int trips, int warmup) {
  Runtime runtime(kSchedulerThreads, 1, /*network=*/true);
  caf::actor echo =
      Connect(ActorSystemOf(runtime), Endpoint{"127.0.0.1", ports.wire}, std::chrono::seconds(10));
  const int tcp = socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in address = Loopback(ports.tcp);
  RILL_CHECK(connect(tcp, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0, kIo,
             "cannot connect to the child's TCP echo: ", std::strerror(errno));
  NoDelay(tcp);
  TransportClient transport(ports.transport);

  std::printf(
      "net_latency: 2 processes over loopback, %d CAF scheduler threads each, %d trips "
      "after %d warm-up\n",
      kSchedulerThreads, trips, warmup);
  std::printf("%-8s %9s  %-27s %-27s %-27s %s\n", "tensor", "bytes", "wire (CAF, encode+decode)",
              "transport (Rill's frames)", "raw TCP (same bytes)",
              "wire/raw transport/raw (medians)");
  {
    caf::scoped_actor self{ActorSystemOf(runtime)};
    for (const int64_t size : {int64_t{4} << 10, int64_t{4} << 20}) {
      const Tensor value = Payload(size);
      int64_t step = 0;
      auto wire_trip = [&] {
        std::string reply;
        self->request(echo, std::chrono::seconds(30), wire_atom::value,
                      EncodeWire(WirePush("fc_0.w_0@GRAD", ++step, value)))
            .receive([&](wire_atom, std::string& bytes) { reply = std::move(bytes); },
                     [&](caf::error& e) {
                       Fail(ErrorCode::kUnavailable,
                            "echo failed: ", ActorSystemOf(runtime).render(e));
                     });
        const Tensor back = WireTensor(DecodeWire(reply, WireLimits{}, "the benchmark's child"));
        RILL_CHECK(back.numel() == value.numel(), kInternal, "the echo changed the tensor");
      };
      Tensor destination(value.dtype(), value.shape());
      auto transport_trip = [&] { transport.RoundTrip(value, destination, ++step); };
      const std::string bytes = EncodeWire(WirePush("fc_0.w_0@GRAD", 1, value));
      std::string echoed;
      auto raw_trip = [&] {
        SendFrame(tcp, bytes);
        RILL_CHECK(ReceiveFrame(tcp, &echoed) && echoed.size() == bytes.size(), kIo,
                   "the TCP echo ended");
      };
      const std::vector<Latency> latencies =
          MeasureInterleaved(trips, warmup, {wire_trip, transport_trip, raw_trip});
      const Latency& wire = latencies[0];
      const Latency& framed = latencies[1];
      const Latency& raw = latencies[2];
      const std::string label =
          size >= (1 << 20) ? StrCat(size >> 20, " MB") : StrCat(size >> 10, " KB");
      std::printf(
          "%-8s %9zu  median %7.3f p90 %7.3f ms  median %7.3f p90 %7.3f ms  median %7.3f p90 "
          "%7.3f ms  %.2fx %.2fx\n",
          label.c_str(), bytes.size(), wire.median_ms, wire.p90_ms, framed.median_ms, framed.p90_ms,
          raw.median_ms, raw.p90_ms, wire.median_ms / raw.median_ms,
          framed.median_ms / raw.median_ms);
    }
  }
  close(tcp);  // the child's signal to stop
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int trips = argc > 1 ? std::max(1, std::atoi(argv[1])) : 100;
  const int warmup = argc > 2 ? std::max(0, std::atoi(argv[2])) : 10;
  // Fork before any thread exists: the child starts its own actor system.
  int fds[2];
  if (pipe(fds) != 0) return std::perror("pipe"), 1;
  const pid_t child = fork();
  if (child < 0) return std::perror("fork"), 1;
  if (child == 0) {
    close(fds[0]);
    int status = 0;
    try {
      ServeEchoes(fds[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "net_latency child: %s\n", e.what());
      status = 1;
    }
    _exit(status);
  }
  close(fds[1]);
  Ports ports;
  const bool ready = ReadAll(fds[0], &ports, sizeof(ports));
  close(fds[0]);
  int result = 1;
  if (!ready) {
    std::fprintf(stderr, "net_latency: the child process did not start its echo servers\n");
  } else {
    try {
      result = RunParent(ports, trips, warmup);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "net_latency: %s\n", e.what());
    }
  }
  if (!ready || result != 0) kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  return result != 0 ? result : (WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1);
}
