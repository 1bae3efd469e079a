// Abuse against a live transport listener: each case sends what a broken or
// hostile peer might, checks that the connection is closed for the right
// reason (and at once, where the rules allow it), and then that the same
// server still echoes a real client's tensor. Before the hello the peer has
// proven nothing, so nothing beyond the fixed hello is read; after it, every
// frame header is checked before anything is allocated.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/transport.h"
#include "rill/error.h"
#include "tests/actors/transport_testing.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using testing::Append;
using testing::EchoesATensor;
using testing::EchoServer;
using testing::HeaderBytes;
using testing::QuietLog;
using testing::RawSocket;
using testing::WaitFor;

// The server's deadlines are long here, so a close within 10 s is the
// answer to what was sent, not a deadline; cases about deadlines shorten them.
TransportOptions PatientOptions() {
  TransportOptions options = testing::TestTransportOptions();
  options.limits.handshake_timeout = 60s;
  options.limits.idle_timeout = 60s;
  return options;
}

void ExpectAllClosedAndServing(EchoServer& server) {
  EXPECT_TRUE(WaitFor(
      [&] {
        return server.transport().stats().handshaking == 0 && server.transport().stats().open == 0;
      },
      10s))
      << "handshaking " << server.transport().stats().handshaking << ", open "
      << server.transport().stats().open;
  EXPECT_TRUE(EchoesATensor(server.port()));
}

// What the issue saw break a CAF server: 32 bytes whose header claims a
// 0xFFFFFFF0-byte payload, as a first packet. Here it is a hello with the
// wrong magic: closed at once, nothing allocated.
TEST(TransportAbuseTest, FourGigabyteClaimBeforeTheHelloIsClosedAtOnce) {
  QuietLog quiet;
  EchoServer server(PatientOptions());
  const size_t resident = testing::ResidentBytes();
  RawSocket socket(server.port());
  ASSERT_TRUE(socket.connected());
  std::vector<uint8_t> packet = HeaderBytes(1, 16, 0xFFFFFFF0u);
  packet.resize(32, 0);
  ASSERT_TRUE(socket.Write(packet));
  EXPECT_TRUE(socket.ClosedByPeerWithin(10s));
  EXPECT_EQ(server.transport().stats().failed_handshakes, 1);
  EXPECT_LT(testing::ResidentBytes(), resident + (64u << 20));
  ExpectAllClosedAndServing(server);
}

TEST(TransportAbuseTest, HalfAHelloThenSilenceIsClosedAtTheHandshakeDeadline) {
  QuietLog quiet;
  TransportOptions options = PatientOptions();
  options.limits.handshake_timeout = 300ms;
  EchoServer server(options);
  RawSocket socket(server.port());
  ASSERT_TRUE(socket.connected());
  const HelloBytes hello = EncodeHello(Hello{});
  ASSERT_TRUE(socket.Write(hello.data(), hello.size() / 2));
  EXPECT_TRUE(socket.ClosedByPeerWithin(10s));
  EXPECT_EQ(server.transport().stats().failed_handshakes, 1);
  ExpectAllClosedAndServing(server);
}

TEST(TransportAbuseTest, GarbageIsClosedAtOnce) {
  QuietLog quiet;
  EchoServer server(PatientOptions());
  std::mt19937 random(17);
  for (int i = 0; i < 20; ++i) {
    RawSocket socket(server.port());
    ASSERT_TRUE(socket.connected());
    std::vector<uint8_t> garbage(kHelloBytes + random() % 4096);  // shorter waits for the deadline
    for (uint8_t& b : garbage) b = static_cast<uint8_t>(random());
    garbage[0] = 'X';       // never "RILL" by chance
    socket.Write(garbage);  // the server may close before all of it is written
    EXPECT_TRUE(socket.ClosedByPeerWithin(10s));
  }
  EXPECT_TRUE(WaitFor([&] { return server.transport().stats().failed_handshakes == 20; }, 10s));
  ExpectAllClosedAndServing(server);
}

TEST(TransportAbuseTest, AThousandConnectsAndDropsLeaveNothingBehind) {
  QuietLog quiet;
  EchoServer server(PatientOptions());
  for (int i = 0; i < 1000; ++i) {
    RawSocket socket(server.port());
    ASSERT_TRUE(socket.connected()) << "connection " << i;
    if (i % 2 == 1) {
      const HelloBytes hello = EncodeHello(Hello{});
      socket.Write(hello.data(), hello.size());  // a hello, then gone before the answer
    }
  }
  ExpectAllClosedAndServing(server);
  EXPECT_EQ(server.transport().stats().accepted + server.transport().stats().refused_at_limit,
            1000 + 1);  // and the echo's client
}

// 50 connections trickle a byte every 50 ms from one address: at most
// max_handshakes_per_address of them are let in, and those end at the
// handshake deadline. A real client from the same address gets in meanwhile.
TEST(TransportAbuseTest, SlowTricklersAreCappedPerAddressAndEndAtTheDeadline) {
  QuietLog quiet;
  TransportOptions options = PatientOptions();
  options.limits.handshake_timeout = 500ms;
  options.limits.max_handshakes_per_address = 8;
  EchoServer server(options);
  std::vector<std::unique_ptr<RawSocket>> sockets;
  for (int i = 0; i < 50; ++i) {
    sockets.push_back(std::make_unique<RawSocket>(server.port()));
    ASSERT_TRUE(sockets.back()->connected());
  }
  const uint8_t byte = 'R';
  for (int round = 0; round < 4; ++round) {
    for (auto& socket : sockets) socket->Write(&byte, 1);
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(EchoesATensor(server.port()));
  for (auto& socket : sockets) EXPECT_TRUE(socket->ClosedByPeerWithin(10s));
  EXPECT_GE(server.transport().stats().refused_at_limit, 42);
  ExpectAllClosedAndServing(server);
}

TEST(TransportAbuseTest, TotalConnectionCapRefusesTheRest) {
  QuietLog quiet;
  TransportOptions options = PatientOptions();
  options.limits.max_connections = 3;
  EchoServer server(options);
  std::vector<std::unique_ptr<RawSocket>> sockets;
  for (int i = 0; i < 3; ++i) {
    sockets.push_back(std::make_unique<RawSocket>(server.port()));
    ASSERT_TRUE(sockets.back()->connected());
  }
  ASSERT_TRUE(WaitFor([&] { return server.transport().stats().accepted == 3; }, 10s));
  RawSocket fourth(server.port());
  ASSERT_TRUE(fourth.connected());  // the kernel accepts; the transport closes it
  EXPECT_TRUE(fourth.ClosedByPeerWithin(10s));
  EXPECT_EQ(server.transport().stats().refused_at_limit, 1);
  sockets.clear();
  ExpectAllClosedAndServing(server);
}

// -- after a good hello -------------------------------------------------------

class AuthenticatedAbuseTest : public ::testing::Test {
 protected:
  void Connect(const TransportOptions& options) {
    server_ = std::make_unique<EchoServer>(options);
    socket_ = std::make_unique<RawSocket>(server_->port());
    ASSERT_TRUE(socket_->connected());
    ASSERT_TRUE(testing::RawHandshake(*socket_, testing::kToken));
    ASSERT_TRUE(WaitFor([&] { return server_->transport().stats().open == 1; }, 10s));
  }
  void ExpectClosedForABadFrame() {
    EXPECT_TRUE(socket_->ClosedByPeerWithin(10s));
    EXPECT_EQ(server_->transport().stats().bad_frames, 1);
    ExpectAllClosedAndServing(*server_);
  }

  QuietLog quiet_;
  std::unique_ptr<EchoServer> server_;
  std::unique_ptr<RawSocket> socket_;
};

TEST_F(AuthenticatedAbuseTest, UnknownFrameKindIsClosedAtOnce) {
  Connect(PatientOptions());
  ASSERT_TRUE(socket_->Write(HeaderBytes(77, 4, 0)));
  ExpectClosedForABadFrame();
}

TEST_F(AuthenticatedAbuseTest, FrameOverTheLimitIsClosedAtOnce) {
  TransportOptions options = PatientOptions();
  options.limits.max_message_bytes = 1 << 20;
  Connect(options);
  ASSERT_TRUE(socket_->Write(HeaderBytes(1, 100, 1 << 20)));
  ExpectClosedForABadFrame();
}

TEST_F(AuthenticatedAbuseTest, FourGigabyteClaimIsClosedAtOnce) {
  Connect(PatientOptions());
  ASSERT_TRUE(socket_->Write(HeaderBytes(1, 100, 0xFFFFFFF0u)));
  ExpectClosedForABadFrame();
}

TEST_F(AuthenticatedAbuseTest, TensorWhoseBytesDoNotMatchDtypeTimesShapeIsClosed) {
  Connect(PatientOptions());
  proto::WireMessage push;
  push.set_kind(proto::WireMessage::PUSH);
  push.set_var("w@GRAD");
  push.mutable_tensor()->set_dtype(proto::FLOAT64);
  push.mutable_tensor()->add_shape(3);
  const std::string meta = push.SerializeAsString();
  std::vector<uint8_t> bytes = HeaderBytes(1, static_cast<uint32_t>(meta.size()), 25);  // not 24
  Append(bytes, meta);
  bytes.resize(bytes.size() + 25, 0);
  ASSERT_TRUE(socket_->Write(bytes));
  ExpectClosedForABadFrame();
}

TEST_F(AuthenticatedAbuseTest, GarbageMetaIsClosed) {
  Connect(PatientOptions());
  std::vector<uint8_t> bytes = HeaderBytes(1, 8, 0);
  for (int i = 0; i < 8; ++i) bytes.push_back(0xFF);
  ASSERT_TRUE(socket_->Write(bytes));
  ExpectClosedForABadFrame();
}

// A payload that stops half way, then silence: the idle timeout ends it, and
// what the server held for it was only what arrived (a 200 MB claim, 1 MB sent).
TEST_F(AuthenticatedAbuseTest, PayloadStoppingHalfWayEndsAtTheIdleTimeoutHoldingOnlyWhatArrived) {
  TransportOptions options = PatientOptions();
  options.limits.idle_timeout = 1500ms;
  Connect(options);
  const size_t resident = testing::ResidentBytes();
  proto::WireMessage push;
  push.set_kind(proto::WireMessage::PUSH);
  push.set_var("w@GRAD");
  push.mutable_tensor()->set_dtype(proto::FLOAT32);
  push.mutable_tensor()->add_shape(50 << 20);  // 200 MiB, under the 256 MiB limit
  const std::string meta = push.SerializeAsString();
  std::vector<uint8_t> bytes =
      HeaderBytes(1, static_cast<uint32_t>(meta.size()), uint64_t{200} << 20);
  Append(bytes, meta);
  bytes.resize(bytes.size() + (1 << 20), 0x3F);
  ASSERT_TRUE(socket_->Write(bytes));
  std::this_thread::sleep_for(300ms);  // let the server read what was sent
  EXPECT_LT(testing::ResidentBytes(), resident + (64u << 20));
  EXPECT_TRUE(socket_->ClosedByPeerWithin(10s));
  EXPECT_EQ(server_->transport().stats().idle_closed, 1);
  ExpectAllClosedAndServing(*server_);
}

TEST_F(AuthenticatedAbuseTest, HalfAHeaderThenSilenceEndsAtTheIdleTimeout) {
  TransportOptions options = PatientOptions();
  options.limits.idle_timeout = 300ms;
  Connect(options);
  const std::vector<uint8_t> header = HeaderBytes(1, 10, 0);
  ASSERT_TRUE(socket_->Write(header.data(), 7));
  EXPECT_TRUE(socket_->ClosedByPeerWithin(10s));
  EXPECT_EQ(server_->transport().stats().idle_closed, 1);
  ExpectAllClosedAndServing(*server_);
}

}  // namespace
}  // namespace rill
