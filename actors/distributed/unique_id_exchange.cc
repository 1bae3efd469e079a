#include "rill/unique_id_exchange.h"

#include <algorithm>
#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <set>
#include <utility>

#include "actors/distributed/network.h"
#include "actors/distributed/unique_id_atoms.h"
#include "actors/executor/runtime_internals.h"
#include "rill/error.h"
#include "rill/log.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;

// What remains of `deadline`, at least 1 ms (CAF's waits take no zero).
std::chrono::milliseconds Left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

// Node 0's actor: answers (uid_get_atom, k) with the id once per node k in
// 1..nodes-1 and tells `owner` (ServeUniqueId's scoped actor) of every answer
// and every acknowledgement.
class UniqueIdServer : public caf::event_based_actor {
 public:
  UniqueIdServer(caf::actor_config& config, std::string id, int nodes, caf::actor owner,
                 std::string label)
      : caf::event_based_actor(config),
        id_(std::move(id)),
        nodes_(nodes),
        owner_(std::move(owner)),
        label_(std::move(label)) {}

  caf::behavior make_behavior() override {
    return {
        [this](uid_get_atom, int32_t node) -> caf::result<uid_atom, std::string> {
          if (node < 1 || node >= nodes_) {
            return Refuse(node,
                          StrCat("node ", node, " is out of range: the nodes that fetch are 1 to ",
                                 nodes_ - 1));
          }
          if (!asked_.insert(node).second) {
            return Refuse(node, StrCat("node ", node,
                                       " asked for the unique id before (two processes with one "
                                       "rank?)"));
          }
          send(owner_, uid_get_atom::value, node);
          return {uid_atom::value, id_};
        },
        [this](uid_ack_atom, int32_t node) {
          if (asked_.count(node) == 0 || !acked_.insert(node).second) {
            Log(StrCat("ignored an acknowledgement from node ", node,
                       acked_.count(node) ? ", which acknowledged before"
                                          : ", which was not sent the id"));
            return;
          }
          send(owner_, uid_ack_atom::value, node);
        },
    };
  }

 private:
  caf::error Refuse(int32_t node, const std::string& why) {
    Log(StrCat("refused a request for node ", node, ": ", why));
    return caf::make_error(caf::sec::invalid_argument, why);
  }
  void Log(const std::string& line) {
    rill::Log(LogLevel::kWarning, "unique id server ", label_, ": ", line);
  }

  const std::string id_;
  const int nodes_;
  const caf::actor owner_;
  const std::string label_;
  std::set<int32_t> asked_, acked_;
};

// Unpublishes and stops the server actor, however ServeUniqueId leaves.
struct StopServer {
  caf::actor_system& system;
  caf::actor actor;
  bool published = false;
  uint16_t port = 0;
  ~StopServer() {
    if (published) static_cast<void>(system.middleman().unpublish(actor, port));
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }
};

// The text a refusing server put in its error, or CAF's rendering of it.
std::string Describe(caf::actor_system& system, const caf::error& error) {
  const caf::message& context = error.context();
  if (context.size() == 1 && context.match_element<std::string>(0)) {
    return context.get_as<std::string>(0);
  }
  return system.render(error);
}

}  // namespace

void ServeUniqueId(Runtime& runtime, const Endpoint& endpoint, const std::string& id, int nodes,
                   std::chrono::milliseconds timeout,
                   const std::function<void(uint16_t port)>& on_published) {
  caf::actor_system& system = ActorSystemOf(runtime);
  const auto deadline = Clock::now() + timeout;
  RILL_CHECK(!id.empty() && id.size() <= kMaxUniqueIdBytes, kInvalidArgument,
             "cannot serve a unique id of ", id.size(), " bytes on ", endpoint.ToString(),
             " (1 to ", kMaxUniqueIdBytes, ")");
  RILL_CHECK(nodes >= 1, kInvalidArgument, "cannot serve a unique id on ", endpoint.ToString(),
             " to ", nodes, " nodes");
  if (nodes == 1) return;
  caf::scoped_actor self{system};
  const std::string label =
      StrCat(endpoint.port == 0 ? endpoint.host : endpoint.ToString(), " (", nodes, " nodes)");
  StopServer server{system, system.spawn<UniqueIdServer>(id, nodes, caf::actor(self), label)};
  server.port = Publish(system, server.actor, endpoint);
  server.published = true;
  const Endpoint bound{endpoint.host, server.port};
  if (on_published) on_published(server.port);

  std::set<int32_t> asked, acked;
  bool timed_out = false;
  while (!timed_out && static_cast<int>(acked.size()) < nodes - 1) {
    if (Clock::now() >= deadline) break;
    self->receive([&](uid_get_atom, int32_t node) { asked.insert(node); },
                  [&](uid_ack_atom, int32_t node) { acked.insert(node); },
                  caf::after(Left(deadline)) >> [&] { timed_out = true; });
  }
  if (static_cast<int>(acked.size()) == nodes - 1) return;
  const int missing = nodes - 1 - static_cast<int>(acked.size());
  constexpr int kNamed = 16;  // a thousand-node job names the first few
  std::string named;
  for (int32_t node = 1, count = 0; node < nodes && count < kNamed; ++node) {
    if (acked.count(node)) continue;
    named += StrCat(count++ ? ", " : "", "node ", node,
                    asked.count(node) ? " (sent the id, no acknowledgement)" : " (never asked)");
  }
  if (missing > kNamed) named += StrCat(" and ", missing - kNamed, " more");
  Fail(ErrorCode::kTimeout, "unique id server on ", bound.ToString(), ": after ", timeout.count(),
       " ms, ", missing, " of ", nodes - 1, " nodes still missing: ", named);
}

std::string FetchUniqueId(Runtime& runtime, const Endpoint& endpoint, int node,
                          std::chrono::milliseconds timeout, size_t expected_size) {
  caf::actor_system& system = ActorSystemOf(runtime);
  const auto deadline = Clock::now() + timeout;
  const std::string where = StrCat("the unique id server at ", endpoint.ToString());
  RILL_CHECK(node >= 1, kInvalidArgument, "cannot fetch the unique id from ", endpoint.ToString(),
             " as node ", node, ": node 0 serves it, nodes 1 and up fetch it");
  caf::actor remote;
  try {
    remote = Connect(system, endpoint, timeout);
  } catch (const Error& e) {
    Fail(e.code(), "node ", node, " fetching the unique id: ", e.message());
  }
  caf::scoped_actor self{system};
  std::string id;
  caf::error failure;
  self->request(remote, Left(deadline), uid_get_atom::value, static_cast<int32_t>(node))
      .receive([&](uid_atom, std::string& bytes) { id = std::move(bytes); },
               [&](caf::error& error) { failure = std::move(error); });
  if (failure == caf::sec::request_timeout) {
    Fail(ErrorCode::kTimeout, where, " did not answer node ", node, " within ", timeout.count(),
         " ms");
  }
  if (failure) {
    Fail(ErrorCode::kUnavailable, where, " refused node ", node, ": ", Describe(system, failure));
  }
  RILL_CHECK(!id.empty() && id.size() <= kMaxUniqueIdBytes, kInvalidArgument, where, " sent node ",
             node, " a unique id of ", id.size(), " bytes (1 to ", kMaxUniqueIdBytes, " expected)");
  RILL_CHECK(expected_size == 0 || id.size() == expected_size, kInvalidArgument, where,
             " sent node ", node, " a unique id of ", id.size(), " bytes, ", expected_size,
             " expected");
  self->send(remote, uid_ack_atom::value, static_cast<int32_t>(node));
  return id;
}

}  // namespace rill
