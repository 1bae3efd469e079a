// Network helpers: endpoints parse or are refused clearly; an actor published
// by one actor system answers wire bytes sent by another over loopback;
// connecting where nothing listens fails in bounded time naming the endpoint.
#include "actors/distributed/network.h"

#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <cstring>

#include "actors/distributed/wire.h"
#include "actors/distributed/wire_atom.h"
#include "actors/executor/runtime_internals.h"
#include "rill/error.h"
#include "rill/runtime.h"
#include "tests/testing/ports.h"

namespace rill {
namespace {

using namespace std::chrono_literals;

// Answers a PUSH with a VALUE of the same tensor, one step later.
// A class, not a function: CAF 0.17 spawns an argument-less function actor
// through a null shared_ptr<tuple<>> it dereferences (UBSan reports it).
class EchoServer : public caf::event_based_actor {
 public:
  using caf::event_based_actor::event_based_actor;
  caf::behavior make_behavior() override {
    return {[](wire_atom, const std::string& bytes) -> caf::result<wire_atom, std::string> {
      const proto::WireMessage push = DecodeWire(bytes, WireLimits{}, "the test client");
      return {wire_atom::value,
              EncodeWire(WireValue(push.var(), push.step() + 1, WireTensor(push)))};
    }};
  }
};

void ExpectError(const std::function<void()>& call, ErrorCode code, const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one containing " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(part), std::string::npos) << "no \"" << part << "\" in " << e.what();
  }
}

TEST(NetworkTest, EndpointsParse) {
  const Endpoint v4 = ParseEndpoint("127.0.0.1:7164");
  EXPECT_EQ(v4.host, "127.0.0.1");
  EXPECT_EQ(v4.port, 7164);
  EXPECT_EQ(v4.ToString(), "127.0.0.1:7164");
  EXPECT_EQ(ParseEndpoint("localhost:0").port, 0);
  EXPECT_EQ(ParseEndpoint("server-1.cluster:65535").port, 65535);
  const Endpoint v6 = ParseEndpoint("[::1]:80");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.ToString(), "[::1]:80");
  const std::vector<Endpoint> list = ParseEndpoints("10.0.0.1:7164,10.0.0.2:7165");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].ToString(), "10.0.0.2:7165");
}

TEST(NetworkTest, BadEndpointsAreRefusedNamingTheText) {
  for (const char* text : {"", "host", "host:", ":80", "host:65536", "host:8x", "host:-1", "::1:80",
                           "[::1]80", "[::1:80", "a b:1", "host:123456"}) {
    ExpectError([&] { ParseEndpoint(text); }, ErrorCode::kInvalidArgument,
                StrCat("endpoint \"", text, "\" is not HOST:PORT"));
  }
  ExpectError([] { ParseEndpoints("a:1,"); }, ErrorCode::kInvalidArgument, "endpoint \"\"");
}

TEST(NetworkTest, WireBytesTravelBetweenTwoActorSystems) {
  Runtime server(2, 1, /*network=*/true);
  Runtime client(2, 1, /*network=*/true);
  caf::actor echo = ActorSystemOf(server).spawn<EchoServer>();
  const uint16_t port = Publish(ActorSystemOf(server), echo, ParseEndpoint("127.0.0.1:0"));
  EXPECT_NE(port, 0);
  Tensor value(DataType::kFloat32, {256, 4});
  float* data = value.mutable_data<float>();
  for (int64_t i = 0; i < value.numel(); ++i) data[i] = 0.25f * static_cast<float>(i);
  {
    caf::actor remote = Connect(ActorSystemOf(client), Endpoint{"127.0.0.1", port}, 5s);
    caf::scoped_actor self{ActorSystemOf(client)};
    std::string reply;
    self->request(remote, 5s, wire_atom::value, EncodeWire(WirePush("w@GRAD", 8, value)))
        .receive([&](wire_atom, std::string& bytes) { reply = std::move(bytes); },
                 [&](caf::error& e) { ADD_FAILURE() << ActorSystemOf(client).render(e); });
    const proto::WireMessage answer = DecodeWire(reply, WireLimits{}, "the test server");
    EXPECT_EQ(answer.kind(), proto::WireMessage::VALUE);
    EXPECT_EQ(answer.var(), "w@GRAD");
    EXPECT_EQ(answer.step(), 9);
    const Tensor back = WireTensor(answer);
    ASSERT_EQ(back.shape(), value.shape());
    EXPECT_EQ(std::memcmp(back.raw_data(), value.raw_data(), value.bytes()), 0);
  }
  // The same port again is taken.
  ExpectError(
      [&] {
        Publish(ActorSystemOf(server), echo, Endpoint{"127.0.0.1", port});
      },
      ErrorCode::kIo, StrCat("cannot publish on 127.0.0.1:", port));
  // A published actor never becomes unreachable: end it, or ~actor_system waits forever.
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
}

TEST(NetworkTest, ConnectingWhereNothingListensFailsInBoundedTime) {
  Runtime client(2, 1, /*network=*/true);
  const uint16_t port = testing::ClosedLoopbackPort();
  const auto start = std::chrono::steady_clock::now();
  ExpectError(
      [&] {
        Connect(ActorSystemOf(client), Endpoint{"127.0.0.1", port}, 300ms);
      },
      ErrorCode::kUnavailable, StrCat("cannot connect to 127.0.0.1:", port, " within 300 ms"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(NetworkTest, WithoutTheNetworkLayerPublishAndConnectFailClearly) {
  Runtime local(1);
  ExpectError(
      [&] {
        Connect(ActorSystemOf(local), Endpoint{"127.0.0.1", 1}, 100ms);
      },
      ErrorCode::kInvalidArgument, "construct the Runtime with network = true");
  caf::actor echo = ActorSystemOf(local).spawn<EchoServer>();
  ExpectError(
      [&] {
        Publish(ActorSystemOf(local), echo, Endpoint{"127.0.0.1", 0});
      },
      ErrorCode::kInvalidArgument, "cannot publish on 127.0.0.1:0");
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace rill
