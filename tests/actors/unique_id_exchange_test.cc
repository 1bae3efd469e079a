// The unique id exchange over loopback, every node a thread of this process:
// every node gets node 0's bytes; a node that never comes, a server that is
// not there or never sets the id, a wrong token, and a node asking twice or
// out of range fail clearly and in time.
#include "rill/unique_id_exchange.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <vector>

#include "actors/distributed/rendezvous_store.h"
#include "rill/error.h"
#include "tests/testing/ports.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const Endpoint kLoopback{"127.0.0.1", 0};
const std::string kToken = "the job's token";

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

// Node 0 serving in the background; port() waits until it listens.
class Server {
 public:
  Server(const std::string& id, int nodes, std::chrono::milliseconds timeout) {
    auto published = std::make_shared<std::promise<uint16_t>>();
    port_ = published->get_future();
    done_ = std::async(std::launch::async, [id, nodes, timeout, published] {
      try {
        ServeUniqueId(kLoopback, kToken, id, nodes, timeout,
                      [&](uint16_t port) { published->set_value(port); });
      } catch (...) {
        try {  // failed before listening
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
  auto fetch1 =
      std::async(std::launch::async, [&] { return FetchUniqueId(at, kToken, 1, 5s, 128); });
  auto fetch2 = std::async(std::launch::async, [&] { return FetchUniqueId(at, kToken, 2, 5s); });
  EXPECT_EQ(fetch1.get(), id);
  EXPECT_EQ(fetch2.get(), id);
  server.Wait();  // returns: both nodes acknowledged
  EXPECT_LT(Clock::now() - start, 3s);
  // The server is gone with its port: a later fetch finds nobody.
  ExpectError([&] { FetchUniqueId(at, kToken, 1, 200ms); }, ErrorCode::kUnavailable,
              {"node 1 fetching the unique id", StrCat("cannot connect to ", at.ToString())});
}

TEST(UniqueIdExchangeTest, ANodeThatNeverComesTimesTheServerOutNamingIt) {
  const std::string id = RandomId(8);
  const auto start = Clock::now();
  Server server(id, 3, 400ms);
  EXPECT_EQ(FetchUniqueId(server.endpoint(), kToken, 1, 2s), id);
  ExpectError([&] { server.Wait(); }, ErrorCode::kTimeout,
              {StrCat("unique id server on ", server.endpoint().ToString()),
               "did not have node 2's acknowledgement within"});
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(UniqueIdExchangeTest, ATimeoutNamesTheFirstSixteenMissingNodesAndCountsTheRest) {
  Server server(RandomId(12), 20, 300ms);  // 19 nodes, none comes
  ExpectError([&] { server.Wait(); }, ErrorCode::kTimeout,
              {StrCat("the rendezvous store at ", server.endpoint().ToString(), " did not have"),
               "node 1's acknowledgement, node 2's acknowledgement",
               "node 16's acknowledgement and 3 more within"});
}

TEST(UniqueIdExchangeTest, FetchingWhereNobodyServesFailsInTime) {
  const Endpoint nobody{"127.0.0.1", testing::ClosedLoopbackPort()};
  const auto start = Clock::now();
  ExpectError([&] { FetchUniqueId(nobody, kToken, 1, 300ms); }, ErrorCode::kUnavailable,
              {"node 1 fetching the unique id",
               StrCat("cannot connect to ", nobody.ToString(), " within 300 ms")});
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(UniqueIdExchangeTest, AServerThatNeverSetsTheIdTimesTheFetchOut) {
  RendezvousStore::Options options;  // a node 0 that listens and never serves
  options.world_size = 2;
  options.master = kLoopback;
  options.token = kToken;
  RendezvousStore silent(options);
  const Endpoint at{"127.0.0.1", silent.port()};
  const auto start = Clock::now();
  ExpectError([&] { FetchUniqueId(at, kToken, 1, 300ms); }, ErrorCode::kTimeout,
              {"node 1 fetching the unique id", "did not have the unique id within"});
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(UniqueIdExchangeTest, AWrongTokenIsRefusedAtOnce) {
  Server server(RandomId(11), 2, 2s);
  const auto start = Clock::now();
  ExpectError([&] { FetchUniqueId(server.endpoint(), "another job's token", 1, 5s); },
              ErrorCode::kUnavailable, {"node 1 fetching the unique id", "tokens differ"});
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(FetchUniqueId(server.endpoint(), kToken, 1, 2s), RandomId(11));
  server.Wait();
}

TEST(UniqueIdExchangeTest, DuplicateAndOutOfRangeNodesAreRefused) {
  const std::string id = RandomId(9);
  Server server(id, 3, 5s);
  ::testing::internal::CaptureStderr();
  // Node 1 holds its connection while the intruders come: it is still a rank
  // of node 0's store then.
  RendezvousStore::Options options;
  options.rank = 1;
  options.world_size = 3;
  options.master = server.endpoint();
  options.token = kToken;
  auto node1 = std::make_unique<RendezvousStore>(options);
  ASSERT_EQ(node1->Get({"rill/unique_id"}, 2s).front(), id);
  ExpectError([&] { FetchUniqueId(server.endpoint(), kToken, 1, 2s); }, ErrorCode::kUnavailable,
              {"node 1 fetching the unique id", "rank 1 has already joined"});
  for (int node : {3, 99}) {
    ExpectError([&] { FetchUniqueId(server.endpoint(), kToken, node, 2s); },
                ErrorCode::kUnavailable,
                {StrCat("node ", node, " fetching the unique id"),
                 StrCat("its rank ", node, " is not in 1..2")});
  }
  node1->Set("rill/unique_id/ack/1", "");
  node1->Leave(2s);
  node1.reset();
  EXPECT_EQ(server.done().wait_for(0ms), std::future_status::timeout) << "served without node 2";
  EXPECT_EQ(FetchUniqueId(server.endpoint(), kToken, 2, 2s), id);
  server.Wait();
  const std::string log = ::testing::internal::GetCapturedStderr();
  for (const char* line :
       {"rank 1 has already joined", "its rank 3 is not in 1..2", "its rank 99 is not in 1..2"}) {
    EXPECT_NE(log.find(line), std::string::npos) << "no \"" << line << "\" in:\n" << log;
  }
}

TEST(UniqueIdExchangeTest, WrongSizesAndBadArgumentsAreRefused) {
  const std::string id = RandomId(10);
  Server server(id, 2, 400ms);
  const std::string where = StrCat("the unique id server at ", server.endpoint().ToString());
  // An id of the wrong size is refused, and not acknowledged: node 0 names the node.
  ExpectError([&] { FetchUniqueId(server.endpoint(), kToken, 1, 2s, 64); },
              ErrorCode::kInvalidArgument,
              {"node 1 fetching the unique id",
               StrCat(where, " sent a unique id of 128 bytes, 64 expected")});
  ExpectError([&] { server.Wait(); }, ErrorCode::kTimeout, {"node 1's acknowledgement"});

  ExpectError([&] { FetchUniqueId(kLoopback, kToken, 0, 100ms); }, ErrorCode::kInvalidArgument,
              {"as node 0: node 0 serves it"});
  ExpectError([&] { ServeUniqueId(kLoopback, kToken, "", 2, 100ms); }, ErrorCode::kInvalidArgument,
              {"a unique id of 0 bytes on 127.0.0.1:0"});
  ExpectError(
      [&] { ServeUniqueId(kLoopback, kToken, std::string(kMaxUniqueIdBytes + 1, 'x'), 2, 100ms); },
      ErrorCode::kInvalidArgument, {"a unique id of 4097 bytes"});
  ExpectError([&] { ServeUniqueId(kLoopback, kToken, id, 0, 100ms); }, ErrorCode::kInvalidArgument,
              {"to 0 nodes"});
  // One node: nobody to serve, nothing listens.
  bool published = false;
  ServeUniqueId(kLoopback, kToken, id, 1, 100ms, [&](uint16_t) { published = true; });
  EXPECT_FALSE(published);
}

}  // namespace
}  // namespace rill
