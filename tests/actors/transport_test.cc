// The transport between two live endpoints on loopback: the handshake (the
// right token opens both ways; a wrong token or a wrong HMAC closes at once,
// naming the cause) and tensors of several dtypes and sizes that come back
// with the same bytes, into a destination buffer or one the decoder allocates.
#include "actors/distributed/transport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "rill/error.h"
#include "tests/actors/transport_testing.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using testing::EchoServer;
using testing::Inbox;
using testing::QuietLog;
using testing::Ramp;
using testing::RawSocket;
using testing::TestTransportOptions;
using testing::WaitFor;

Endpoint Loopback(uint16_t port) { return ParseEndpoint(StrCat("127.0.0.1:", port)); }

TEST(TransportTest, RightTokenOpensBothWaysWithThePeersRoleAndId) {
  QuietLog quiet;
  Inbox server_inbox, client_inbox;
  Transport server(TestTransportOptions(), server_inbox.Callbacks());
  const uint16_t port = server.Listen(ParseEndpoint("127.0.0.1:0"));
  Transport client(TestTransportOptions(), client_inbox.Callbacks());
  client.Connect(Loopback(port), Hello{PeerRole::kTrainer, 5, {}}, 10s);
  const auto seen = server_inbox.PopOpen(10s);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->hello.role, PeerRole::kTrainer);
  EXPECT_EQ(seen->hello.id, 5);
  EXPECT_TRUE(seen->incoming);
  EXPECT_NE(seen->address.find("127.0.0.1:"), std::string::npos);
  EXPECT_TRUE(client_inbox.PopOpen(10s).has_value());
  EXPECT_TRUE(WaitFor([&] { return server.stats().open == 1 && client.stats().open == 1; }, 10s));
  EXPECT_EQ(server.stats().failed_handshakes, 0);
}

TEST(TransportTest, WrongTokenFailsAtOnceAndTheServerCountsIt) {
  QuietLog quiet;
  EchoServer server;
  TransportOptions other = TestTransportOptions();
  other.token = "another job's token";
  Transport client(other, {});
  const auto start = std::chrono::steady_clock::now();
  try {
    client.Connect(Loopback(server.port()), Hello{PeerRole::kTrainer, 1, {}}, 20s);
    FAIL() << "connected with a wrong token";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_NE(error.message().find("tokens differ"), std::string::npos) << error.message();
  }
  // Not retried until the 20 s timeout: a refused token is final.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_TRUE(WaitFor([&] { return server.transport().stats().failed_handshakes == 1; }, 10s));
  EXPECT_EQ(server.transport().stats().open, 0);
  EXPECT_TRUE(testing::EchoesATensor(server.port()));
}

TEST(TransportTest, ClientRefusesAServerThatDoesNotHoldTheToken) {
  QuietLog quiet;
  TransportOptions other = TestTransportOptions();
  other.token = "an impostor's token";
  Transport server(other, {});
  const uint16_t port = server.Listen(ParseEndpoint("127.0.0.1:0"));
  Transport client(TestTransportOptions(), {});
  // The server refuses our answer first (its token differs): either way the
  // client fails at once, naming the token.
  try {
    client.Connect(Loopback(port), Hello{PeerRole::kTrainer, 1, {}}, 20s);
    FAIL() << "connected to a server with another token";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_NE(error.message().find("token"), std::string::npos) << error.message();
  }
}

TEST(TransportTest, WrongHmacClosesAtOnce) {
  QuietLog quiet;
  TransportOptions options = TestTransportOptions();
  options.limits.handshake_timeout =
      60s;  // a close within 10 s is the wrong answer's, not the deadline's
  EchoServer server(options);
  RawSocket socket(server.port());
  ASSERT_TRUE(socket.connected());
  Hello hello;
  const HelloBytes hello_bytes = EncodeHello(hello);
  ASSERT_TRUE(socket.Write(hello_bytes.data(), hello_bytes.size()));
  Nonce challenge{};
  ASSERT_TRUE(socket.ReadExactly(challenge.data(), challenge.size(), 10s));
  Mac wrong = HandshakeMac(testing::kToken, MacSide::kClient, hello_bytes, challenge);
  wrong[0] ^= 1;
  ASSERT_TRUE(socket.Write(wrong.data(), wrong.size()));
  EXPECT_TRUE(socket.ClosedByPeerWithin(10s));
  EXPECT_EQ(server.transport().stats().failed_handshakes, 1);
  EXPECT_EQ(server.transport().stats().open, 0);
  EXPECT_TRUE(testing::EchoesATensor(server.port()));
}

TEST(TransportTest, ConnectingWhereNothingListensFailsInBoundedTimeNamingTheEndpoint) {
  Transport client(TestTransportOptions(), {});
  // Bind then close a port, so nothing listens there.
  uint16_t port = 0;
  {
    Transport probe(TestTransportOptions(), {});
    port = probe.Listen(ParseEndpoint("127.0.0.1:0"));
  }
  try {
    client.Connect(Loopback(port), Hello{}, 300ms);
    FAIL() << "connected where nothing listens";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_NE(error.message().find(StrCat("127.0.0.1:", port)), std::string::npos)
        << error.message();
  }
}

// Tensors of each dtype and of sizes from empty to 4 MB go to an echo server
// and come back with the same bytes, dtype and shape; several frames queued at
// once keep their order.
TEST(TransportTest, TensorsOfSeveralDtypesAndSizesRoundTrip) {
  QuietLog quiet;
  EchoServer server;
  Inbox inbox;
  Transport client(TestTransportOptions(), inbox.Callbacks());
  const ConnectionId to = client.Connect(Loopback(server.port()), Hello{}, 10s);
  struct Case {
    DataType dtype;
    Shape shape;
  };
  const std::vector<Case> cases = {
      {DataType::kFloat32, {1 << 20}},  // 4 MB
      {DataType::kFloat64, {3, 5, 7}}, {DataType::kInt32, {1}},  {DataType::kInt64, {100000}},
      {DataType::kFloat32, {0, 4}},    {DataType::kFloat32, {}},  // a scalar
  };
  std::vector<Tensor> sent;
  for (size_t i = 0; i < cases.size(); ++i) {
    sent.push_back(Ramp(cases[i].dtype, cases[i].shape, static_cast<int>(i)));
    proto::WireMessage push;
    push.set_kind(proto::WireMessage::PUSH);
    push.set_var(StrCat("v", i));
    push.set_step(static_cast<int64_t>(i));
    client.Send(to, EncodeMessageFrame(push, sent.back()));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(sent[i].Describe());
    auto reply = inbox.PopFrame(20s);
    ASSERT_TRUE(reply.has_value());
    const ReceivedFrame& frame = reply->second;
    EXPECT_EQ(frame.message.var(), StrCat("v", i));
    EXPECT_EQ(frame.message.step(), static_cast<int64_t>(i) + 1);
    if (sent[i].bytes() == 0) {
      EXPECT_FALSE(frame.payload.initialized());
      EXPECT_EQ(frame.message.tensor().dtype(), ToProto(sent[i].dtype()));
      continue;
    }
    ASSERT_TRUE(frame.payload.initialized());
    EXPECT_EQ(frame.payload.dtype(), sent[i].dtype());
    EXPECT_EQ(frame.payload.shape(), sent[i].shape());
    EXPECT_EQ(std::memcmp(frame.payload.raw_data(), sent[i].raw_data(), sent[i].bytes()), 0);
  }
}

// The receiver's own tensor takes the bytes: same memory before and after.
TEST(TransportTest, PayloadIsReadIntoTheDestinationTensor) {
  QuietLog quiet;
  EchoServer server;
  Inbox inbox;
  Tensor destination(DataType::kFloat64, {512, 33});
  const void* where = destination.raw_data();
  TransportCallbacks callbacks = inbox.Callbacks();
  callbacks.destination = [&](ConnectionId, const proto::WireMessage& message) {
    return message.var() == "w" ? destination : Tensor();
  };
  Transport client(TestTransportOptions(), callbacks);
  const ConnectionId to = client.Connect(Loopback(server.port()), Hello{}, 10s);
  const Tensor value = Ramp(DataType::kFloat64, {512, 33}, 9);
  proto::WireMessage push;
  push.set_kind(proto::WireMessage::PUSH);
  push.set_var("w");
  bool written = false;
  std::mutex mutex;
  client.Send(to, EncodeMessageFrame(push, value), [&](bool ok) {
    std::lock_guard<std::mutex> lock(mutex);
    written = ok;
  });
  auto reply = inbox.PopFrame(20s);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->second.payload.raw_data(), where);
  EXPECT_EQ(std::memcmp(destination.raw_data(), value.raw_data(), value.bytes()), 0);
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_TRUE(written);
}

// Threads sending on one connection at once: every frame comes back once,
// with its payload, and each thread's frames in the order it sent them.
TEST(TransportTest, ThreadsSendingOnOneConnectionKeepEachThreadsOrder) {
  QuietLog quiet;
  EchoServer server;
  Inbox inbox;
  Transport client(TestTransportOptions(), inbox.Callbacks());
  const ConnectionId to = client.Connect(Loopback(server.port()), Hello{}, 10s);
  constexpr int kThreads = 4, kFrames = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kFrames; ++i) {
        Tensor value(DataType::kInt32, {1 + i % 5});
        for (int64_t j = 0; j < value.numel(); ++j) value.mutable_data<int32_t>()[j] = t * 1000 + i;
        proto::WireMessage push;
        push.set_kind(proto::WireMessage::PUSH);
        push.set_var(StrCat("t", t));
        push.set_step(i);
        client.Send(to, EncodeMessageFrame(push, value));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<int> next(kThreads, 0);
  for (int n = 0; n < kThreads * kFrames; ++n) {
    auto reply = inbox.PopFrame(20s);
    ASSERT_TRUE(reply.has_value()) << "reply " << n << " of " << kThreads * kFrames;
    const ReceivedFrame& frame = reply->second;
    const int t = std::stoi(frame.message.var().substr(1));
    ASSERT_TRUE(t >= 0 && t < kThreads);
    const int i = static_cast<int>(frame.message.step()) - 1;  // the echo adds one
    EXPECT_EQ(i, next[t]) << "thread " << t << "'s frames out of order";
    next[t] = i + 1;
    ASSERT_TRUE(frame.payload.initialized());
    EXPECT_EQ(frame.payload.numel(), 1 + i % 5);
    EXPECT_EQ(frame.payload.data<int32_t>()[0], t * 1000 + i);
  }
  EXPECT_EQ(next, std::vector<int>(kThreads, kFrames));
}

// A handler's failure is the receiver's, not the peer's: logged, and the
// connection goes on.
TEST(TransportTest, HandlerThatThrowsLeavesTheConnectionOpen) {
  QuietLog quiet;
  auto server_ptr = std::make_shared<Transport*>(nullptr);
  TransportCallbacks callbacks;
  callbacks.on_frame = [server_ptr](ConnectionId from, ReceivedFrame frame) {
    if (frame.kind == FrameKind::kHeartbeat) return;
    if (frame.message.var() == "boom") Fail(ErrorCode::kInternal, "the handler failed");
    (*server_ptr)->Send(from, EncodeMessageFrame(frame.message, Tensor()));
  };
  Transport server(TestTransportOptions(), callbacks);
  *server_ptr = &server;
  const uint16_t port = server.Listen(ParseEndpoint("127.0.0.1:0"));
  Inbox inbox;
  Transport client(TestTransportOptions(), inbox.Callbacks());
  const ConnectionId to = client.Connect(Loopback(port), Hello{}, 10s);
  for (const char* var : {"boom", "fine"}) {
    proto::WireMessage pull;
    pull.set_kind(proto::WireMessage::PULL);
    pull.set_var(var);
    client.Send(to, EncodeMessageFrame(pull, Tensor()));
  }
  auto reply = inbox.PopFrame(10s);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->second.message.var(), "fine");
  EXPECT_EQ(server.stats().bad_frames, 0);
  EXPECT_EQ(server.stats().open, 1);
  EXPECT_NE(quiet.log.Find("the handler failed"), nullptr);
}

TEST(TransportTest, SendingOnAClosedConnectionReportsNotWritten) {
  QuietLog quiet;
  Inbox inbox;
  auto server = std::make_unique<EchoServer>();
  Transport client(TestTransportOptions(), inbox.Callbacks());
  const ConnectionId to = client.Connect(Loopback(server->port()), Hello{}, 10s);
  const uint16_t port = server->port();
  server.reset();  // closes its end
  const auto why = inbox.PopClose(10s);
  ASSERT_TRUE(why.has_value());
  // The server is named by its address (we announced ourselves, not it).
  EXPECT_NE(why->find(StrCat("127.0.0.1:", port)), std::string::npos) << *why;
  EXPECT_EQ(why->find("trainer"), std::string::npos) << *why;
  std::promise<bool> result;
  client.Send(to, EncodeHeartbeatFrame(), [&](bool ok) { result.set_value(ok); });
  auto future = result.get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(future.get());
}

}  // namespace
}  // namespace rill
