#include "rill/unique_id_exchange.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "actors/distributed/rendezvous_store.h"
#include "rill/error.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;

// The id's key in node 0's store, and the key each node sets once it holds
// the id (its acknowledgement).
constexpr const char* kIdKey = "rill/unique_id";
constexpr const char* kAckPrefix = "rill/unique_id/ack/";

// What remains of `timeout` since `start`, at least 1 ms.
std::chrono::milliseconds Left(Clock::time_point start, std::chrono::milliseconds timeout) {
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return std::max(timeout - spent, std::chrono::milliseconds(1));
}

}  // namespace

void ServeUniqueId(const Endpoint& endpoint, const std::string& token, const std::string& id,
                   int nodes, std::chrono::milliseconds timeout,
                   const std::function<void(uint16_t port)>& on_published) {
  const auto start = Clock::now();
  RILL_CHECK(!id.empty() && id.size() <= kMaxUniqueIdBytes, kInvalidArgument,
             "cannot serve a unique id of ", id.size(), " bytes on ", endpoint.ToString(),
             " (1 to ", kMaxUniqueIdBytes, ")");
  RILL_CHECK(nodes >= 1, kInvalidArgument, "cannot serve a unique id on ", endpoint.ToString(),
             " to ", nodes, " nodes");
  if (nodes == 1) return;
  RendezvousStore::Options options;
  options.rank = 0;
  options.world_size = nodes;
  options.master = endpoint;
  options.token = token;
  options.timeout = timeout;
  RendezvousStore store(options);  // throws kIo naming the endpoint when it cannot bind
  const Endpoint bound{endpoint.host, store.port()};
  if (on_published) on_published(store.port());
  store.Set(kIdKey, id);
  std::vector<std::string> acks;
  for (int node = 1; node < nodes; ++node) acks.push_back(StrCat(kAckPrefix, node));
  try {
    store.Get(acks, Left(start, timeout), [](const std::string& key) {
      return StrCat("node ", key.substr(std::string(kAckPrefix).size()), "'s acknowledgement");
    });
  } catch (const Error& e) {
    Fail(e.code(), "unique id server on ", bound.ToString(), ": ", e.message());
  }
  store.Leave(Left(start, timeout));  // the nodes' goodbyes: their connections may close
}

std::string FetchUniqueId(const Endpoint& endpoint, const std::string& token, int node,
                          std::chrono::milliseconds timeout, size_t expected_size) {
  const auto start = Clock::now();
  const std::string where = StrCat("the unique id server at ", endpoint.ToString());
  RILL_CHECK(node >= 1, kInvalidArgument, "cannot fetch the unique id from ", endpoint.ToString(),
             " as node ", node, ": node 0 serves it, nodes 1 and up fetch it");
  RendezvousStore::Options options;
  options.rank = node;
  options.world_size = node + 1;  // a node knows no more of the job; node 0 checks the range
  options.master = endpoint;
  options.token = token;
  options.timeout = timeout;
  std::string id;
  try {
    RendezvousStore store(options);
    id = store
             .Get({kIdKey}, Left(start, timeout),
                  [](const std::string&) { return std::string("the unique id"); })
             .front();
    RILL_CHECK(!id.empty() && id.size() <= kMaxUniqueIdBytes, kInvalidArgument, where,
               " sent a unique id of ", id.size(), " bytes (1 to ", kMaxUniqueIdBytes,
               " expected)");
    RILL_CHECK(expected_size == 0 || id.size() == expected_size, kInvalidArgument, where,
               " sent a unique id of ", id.size(), " bytes, ", expected_size, " expected");
    store.Set(StrCat(kAckPrefix, node), "");
    store.Leave(Left(start, timeout));  // returns once the goodbye (after the ack) is written
  } catch (const Error& e) {
    Fail(e.code(), "node ", node, " fetching the unique id: ", e.message());
  }
  return id;
}

}  // namespace rill
