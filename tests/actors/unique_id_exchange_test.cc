// The unique id exchange over loopback, one Runtime per node in one process:
// every node gets node 0's bytes; a node that never comes, a server that is
// not there, and a node asking twice or out of range fail clearly and in time.
#include "rill/unique_id_exchange.h"

#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <vector>

#include "actors/distributed/network.h"
#include "actors/distributed/unique_id_atoms.h"
#include "actors/executor/runtime_internals.h"
#include "rill/error.h"
#include "rill/runtime.h"
#include "tests/testing/ports.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const Endpoint kLoopback{"127.0.0.1", 0};

// 128 bytes like an ncclUniqueId, with zeros inside (the id is binary).
std::string RandomId(uint32_t seed) {
  std::mt19937 random(seed);
  std::string id(128, '\0');
  for (char& c : id) c = static_cast<char>(random() & 0xff);
  id[0] = id[64] = '\0';
  return id;
}

void ExpectError(const std::function<void()>& call, ErrorCode code,
                 const std::vector<std::string>& parts) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one containing " << parts.front();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(e.message().find(part), std::string::npos)
          << "no \"" << part << "\" in " << e.what();
    }
  }
}

// Node 0 serving in the background; port() waits until it is published.
class Server {
 public:
  Server(const std::string& id, int nodes, std::chrono::milliseconds timeout)
      : runtime_(std::make_unique<Runtime>(1, 1, /*network=*/true)) {
    auto published = std::make_shared<std::promise<uint16_t>>();
    port_ = published->get_future();
    done_ = std::async(std::launch::async, [this, id, nodes, timeout, published] {
      try {
        ServeUniqueId(*runtime_, kLoopback, id, nodes, timeout,
                      [&](uint16_t port) { published->set_value(port); });
      } catch (...) {
        try {  // failed before publishing
          published->set_exception(std::current_exception());
        } catch (const std::future_error&) {
        }
        throw;
      }
    });
  }
  ~Server() {
    if (done_.valid()) done_.wait();
  }
  uint16_t port() {
    if (port_.valid()) port_value_ = port_.get();
    return port_value_;
  }
  Endpoint endpoint() { return Endpoint{"127.0.0.1", port()}; }
  // Rethrows what ServeUniqueId threw.
  void Wait() { done_.get(); }
  std::future<void>& done() { return done_; }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::future<uint16_t> port_;
  uint16_t port_value_ = 0;
  std::future<void> done_;
};

TEST(UniqueIdExchangeTest, ThreeNodesGetTheSameBytes) {
  const std::string id = RandomId(7);
  const auto start = Clock::now();
  Server server(id, 3, 5s);
  const Endpoint at = server.endpoint();
  ASSERT_NE(at.port, 0);
  Runtime node1(1, 1, true), node2(1, 1, true);
  auto fetch1 =
      std::async(std::launch::async, [&] { return FetchUniqueId(node1, at, 1, 5s, 128); });
  auto fetch2 = std::async(std::launch::async, [&] { return FetchUniqueId(node2, at, 2, 5s); });
  EXPECT_EQ(fetch1.get(), id);
  EXPECT_EQ(fetch2.get(), id);
  server.Wait();  // returns: both nodes acknowledged
  EXPECT_LT(Clock::now() - start, 3s);
  // The server is gone with its port: a later fetch finds nobody.
  Runtime late(1, 1, true);
  ExpectError([&] { FetchUniqueId(late, at, 1, 200ms); }, ErrorCode::kUnavailable,
              {StrCat("cannot connect to ", at.ToString())});
}

TEST(UniqueIdExchangeTest, ANodeThatNeverComesTimesTheServerOut) {
  const std::string id = RandomId(8);
  const auto start = Clock::now();
  Server server(id, 3, 400ms);
  Runtime node1(1, 1, true);
  EXPECT_EQ(FetchUniqueId(node1, server.endpoint(), 1, 2s), id);
  ExpectError([&] { server.Wait(); }, ErrorCode::kTimeout,
              {StrCat("unique id server on ", server.endpoint().ToString()), "after 400 ms",
               "1 of 2 nodes still missing: node 2 (never asked)"});
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(UniqueIdExchangeTest, FetchingWhereNobodyServesFailsInTime) {
  Runtime node1(1, 1, true);
  const Endpoint nobody{"127.0.0.1", testing::ClosedLoopbackPort()};
  const auto start = Clock::now();
  ExpectError([&] { FetchUniqueId(node1, nobody, 1, 300ms); }, ErrorCode::kUnavailable,
              {"node 1 fetching the unique id",
               StrCat("cannot connect to ", nobody.ToString(), " within 300 ms")});
  EXPECT_LT(Clock::now() - start, 2s);
}

// Takes every request and never answers (a node 0 that hangs).
class SilentServer : public caf::event_based_actor {
 public:
  using caf::event_based_actor::event_based_actor;
  caf::behavior make_behavior() override {
    return {[this](uid_get_atom, int32_t) -> caf::result<uid_atom, std::string> {
      pending_.push_back(make_response_promise());
      return pending_.back();
    }};
  }
  // The promises refer to this actor: dropped here, or it would never be freed.
  void on_exit() override { pending_.clear(); }

 private:
  std::vector<caf::response_promise> pending_;
};

TEST(UniqueIdExchangeTest, AServerThatNeverAnswersTimesTheFetchOut) {
  Runtime node0(1, 1, true), node1(1, 1, true);
  caf::actor silent = ActorSystemOf(node0).spawn<SilentServer>();
  const Endpoint at{"127.0.0.1", Publish(ActorSystemOf(node0), silent, kLoopback)};
  const auto start = Clock::now();
  ExpectError(
      [&] { FetchUniqueId(node1, at, 1, 300ms); }, ErrorCode::kTimeout,
      {StrCat("the unique id server at ", at.ToString(), " did not answer node 1 within 300 ms")});
  EXPECT_LT(Clock::now() - start, 2s);
  caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
}

TEST(UniqueIdExchangeTest, DuplicateAndOutOfRangeNodesAreRefused) {
  const std::string id = RandomId(9);
  Server server(id, 3, 5s);
  Runtime node1(1, 1, true), intruder(1, 1, true), node2(1, 1, true);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(FetchUniqueId(node1, server.endpoint(), 1, 2s), id);
  const std::string where = StrCat("the unique id server at ", server.endpoint().ToString());
  ExpectError([&] { FetchUniqueId(intruder, server.endpoint(), 1, 2s); }, ErrorCode::kUnavailable,
              {where, "refused node 1: node 1 asked for the unique id before"});
  for (int node : {3, 99}) {
    ExpectError([&] { FetchUniqueId(intruder, server.endpoint(), node, 2s); },
                ErrorCode::kUnavailable,
                {StrCat(where, " refused node ", node, ": node ", node,
                        " is out of range: the nodes that fetch are 1 to 2")});
  }
  {  // Node 0 and below are refused by the server as well (FetchUniqueId refuses them itself).
    caf::actor remote = Connect(ActorSystemOf(intruder), server.endpoint(), 2s);
    caf::scoped_actor self{ActorSystemOf(intruder)};
    for (int32_t node : {0, -1}) {
      bool refused = false;
      self->request(remote, 2s, uid_get_atom::value, node)
          .receive(
              [&](uid_atom, const std::string&) { ADD_FAILURE() << "node " << node << " served"; },
              [&](caf::error&) { refused = true; });
      EXPECT_TRUE(refused) << node;
    }
  }
  EXPECT_EQ(server.done().wait_for(0ms), std::future_status::timeout) << "served without node 2";
  EXPECT_EQ(FetchUniqueId(node2, server.endpoint(), 2, 2s), id);
  server.Wait();
  const std::string log = ::testing::internal::GetCapturedStderr();
  for (const char* line : {"refused a request for node 1: node 1 asked for the unique id before",
                           "refused a request for node 3", "refused a request for node 99",
                           "refused a request for node 0", "refused a request for node -1"}) {
    EXPECT_NE(log.find(line), std::string::npos) << "no \"" << line << "\" in:\n" << log;
  }
}

TEST(UniqueIdExchangeTest, WrongSizesAndBadArgumentsAreRefused) {
  const std::string id = RandomId(10);
  Server server(id, 2, 400ms);
  Runtime node1(1, 1, true);
  const std::string where = StrCat("the unique id server at ", server.endpoint().ToString());
  // A reply of the wrong size is refused, and not acknowledged: the server names the node.
  ExpectError([&] { FetchUniqueId(node1, server.endpoint(), 1, 2s, 64); },
              ErrorCode::kInvalidArgument,
              {StrCat(where, " sent node 1 a unique id of 128 bytes, 64 expected")});
  ExpectError([&] { server.Wait(); }, ErrorCode::kTimeout,
              {"node 1 (sent the id, no acknowledgement)"});

  ExpectError([&] { FetchUniqueId(node1, kLoopback, 0, 100ms); }, ErrorCode::kInvalidArgument,
              {"as node 0: node 0 serves it"});
  ExpectError([&] { ServeUniqueId(node1, kLoopback, "", 2, 100ms); }, ErrorCode::kInvalidArgument,
              {"a unique id of 0 bytes on 127.0.0.1:0"});
  ExpectError(
      [&] { ServeUniqueId(node1, kLoopback, std::string(kMaxUniqueIdBytes + 1, 'x'), 2, 100ms); },
      ErrorCode::kInvalidArgument, {"a unique id of 4097 bytes"});
  ExpectError([&] { ServeUniqueId(node1, kLoopback, id, 0, 100ms); }, ErrorCode::kInvalidArgument,
              {"to 0 nodes"});
  // One node: nobody to serve, nothing published.
  bool published = false;
  ServeUniqueId(node1, kLoopback, id, 1, 100ms, [&](uint16_t) { published = true; });
  EXPECT_FALSE(published);
}

}  // namespace
}  // namespace rill
