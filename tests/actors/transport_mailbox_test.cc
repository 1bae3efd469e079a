// A transport driven by a CAF actor (actors/distributed/transport_mailbox.h):
// the actor learns of the peer, answers each frame from its handler with
// Transport::Send (the payload echoed from the tensor it received), and
// learns of the close.
#include "actors/distributed/transport_mailbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <cstring>
#include <memory>

#include "actors/distributed/transport.h"
#include "actors/executor/runtime_internals.h"
#include "rill/runtime.h"
#include "tests/actors/transport_testing.h"
#include "tests/testing/captured_log.h"

namespace rill {
namespace {

using namespace std::chrono_literals;

// What the actor saw, read by the test thread.
struct Seen {
  std::atomic<int> opens{0};
  std::atomic<int> trainer_id{-1};
  std::atomic<int> frames{0};
  std::atomic<int> closes{0};
};

class EchoActor : public caf::event_based_actor {
 public:
  EchoActor(caf::actor_config& config, std::shared_ptr<Transport*> transport,
            std::shared_ptr<Seen> seen)
      : caf::event_based_actor(config), transport_(std::move(transport)), seen_(std::move(seen)) {}

  caf::behavior make_behavior() override {
    return {
        [this](transport_open_atom, ConnectionId, const PeerInfo& peer) {
          seen_->trainer_id = peer.hello.id;
          ++seen_->opens;
        },
        [this](transport_frame_atom, ConnectionId from, ReceivedFrame& frame) {
          ++seen_->frames;
          proto::WireMessage reply;
          reply.set_kind(proto::WireMessage::VALUE);
          reply.set_var(frame.message.var());
          reply.set_step(frame.message.step() + 1);
          (*transport_)->Send(from, EncodeMessageFrame(std::move(reply), frame.payload));
        },
        [this](transport_close_atom, ConnectionId, const std::string&) { ++seen_->closes; },
    };
  }

 private:
  std::shared_ptr<Transport*> transport_;
  std::shared_ptr<Seen> seen_;
};

TEST(TransportMailboxTest, AnActorAnswersFramesAndLearnsOfOpenAndClose) {
  testing::CapturedLog log;
  SetLogSink(log.Sink());
  Runtime runtime(2);
  auto seen = std::make_shared<Seen>();
  auto holder = std::make_shared<Transport*>(nullptr);
  caf::actor actor = ActorSystemOf(runtime).spawn<EchoActor>(holder, seen);
  {
    Transport server(testing::TestTransportOptions(), CallbacksToActor(actor));
    *holder = &server;
    const uint16_t port = server.Listen(ParseEndpoint("127.0.0.1:0"));
    testing::Inbox inbox;
    Transport client(testing::TestTransportOptions(), inbox.Callbacks());
    const ConnectionId to = client.Connect(ParseEndpoint(StrCat("127.0.0.1:", port)),
                                           Hello{PeerRole::kTrainer, 7, {}}, 10s);
    Tensor value(DataType::kFloat64, {64, 9});
    for (int64_t i = 0; i < value.numel(); ++i) value.mutable_data<double>()[i] = 0.25 * double(i);
    for (int step = 0; step < 3; ++step) {
      proto::WireMessage push;
      push.set_kind(proto::WireMessage::PUSH);
      push.set_var("w@GRAD");
      push.set_step(step);
      client.Send(to, EncodeMessageFrame(push, value));
    }
    for (int step = 0; step < 3; ++step) {
      auto reply = inbox.PopFrame(10s);
      ASSERT_TRUE(reply.has_value()) << "reply " << step;
      EXPECT_EQ(reply->second.message.step(), step + 1);
      ASSERT_TRUE(reply->second.payload.initialized());
      EXPECT_EQ(std::memcmp(reply->second.payload.raw_data(), value.raw_data(), value.bytes()), 0);
    }
    EXPECT_EQ(seen->opens, 1);
    EXPECT_EQ(seen->trainer_id, 7);
    EXPECT_EQ(seen->frames, 3);
    client.Close(to);
    EXPECT_TRUE(testing::WaitFor([&] { return seen->closes == 1; }, 10s));
  }
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  SetLogSink(nullptr);
}

}  // namespace
}  // namespace rill
