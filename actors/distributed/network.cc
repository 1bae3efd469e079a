#include "actors/distributed/network.h"

#include <algorithm>
#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <set>
#include <thread>

#include "rill/error.h"

namespace rill {
namespace {

// Between connection attempts to a server that is not listening yet.
constexpr std::chrono::milliseconds kRetryInterval{50};

[[noreturn]] void BadEndpoint(const std::string& text, const std::string& why) {
  Fail(ErrorCode::kInvalidArgument, "endpoint \"", text, "\" is not HOST:PORT: ", why);
}

uint16_t ParsePort(const std::string& text, const std::string& port) {
  if (port.empty()) BadEndpoint(text, "no port after ':'");
  if (port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    BadEndpoint(text, "port \"" + port + "\" is not a number from 0 to 65535");
  }
  const int value = std::stoi(port);
  if (value > 65535) BadEndpoint(text, "port " + port + " is over 65535");
  return static_cast<uint16_t>(value);
}

void RequireMiddleman(caf::actor_system& system, const Endpoint& endpoint, const char* what) {
  RILL_CHECK(system.has_middleman(), kInvalidArgument, "cannot ", what, " ", endpoint.ToString(),
             ": the actor system has no network layer (construct the Runtime with network = true)");
}

}  // namespace

std::string Endpoint::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return StrCat(v6 ? "[" : "", host, v6 ? "]" : "", ":", port);
}

Endpoint ParseEndpoint(const std::string& text) {
  Endpoint endpoint;
  size_t colon = 0;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) BadEndpoint(text, "'[' without ']'");
    endpoint.host = text.substr(1, close - 1);
    colon = close + 1;
    if (colon >= text.size() || text[colon] != ':') BadEndpoint(text, "no ':PORT' after ']'");
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos) BadEndpoint(text, "no ':PORT'");
    endpoint.host = text.substr(0, colon);
    if (endpoint.host.find(':') != std::string::npos) {
      BadEndpoint(text, "an IPv6 address goes in brackets: [ADDRESS]:PORT");
    }
  }
  if (endpoint.host.empty()) BadEndpoint(text, "no host");
  for (char c : endpoint.host) {
    if (c <= ' ' || c == ',' || c == '/' || c == '[' || c == ']') {
      BadEndpoint(text, StrCat("the host has a '", c, "'"));
    }
  }
  endpoint.port = ParsePort(text, text.substr(colon + 1));
  return endpoint;
}

std::vector<Endpoint> ParseEndpoints(const std::string& list) {
  std::vector<Endpoint> endpoints;
  size_t begin = 0;
  while (true) {
    const size_t comma = list.find(',', begin);
    endpoints.push_back(ParseEndpoint(list.substr(begin, comma - begin)));
    if (comma == std::string::npos) return endpoints;
    begin = comma + 1;
  }
}

uint16_t Publish(caf::actor_system& system, const caf::actor& actor, const Endpoint& endpoint) {
  RequireMiddleman(system, endpoint, "publish on");
  // reuse_addr: a restarted server binds its port again while the old
  // connections linger in TIME_WAIT (two live listeners are still refused).
  auto port = system.middleman().publish(actor, endpoint.port, endpoint.host.c_str(),
                                         /*reuse_addr=*/true);
  if (!port) {
    Fail(ErrorCode::kIo, "cannot publish on ", endpoint.ToString(), ": ",
         system.render(port.error()));
  }
  return *port;
}

caf::actor Connect(caf::actor_system& system, const Endpoint& endpoint,
                   std::chrono::milliseconds timeout) {
  RequireMiddleman(system, endpoint, "connect to");
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  caf::scoped_actor self{system};
  std::string last_failure = "no attempt within the timeout";
  int attempts = 0;
  for (auto left = timeout; left.count() > 0;
       left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())) {
    // Asking the middleman with a timeout bounds a connect that hangs (a
    // host that drops packets); remote_actor() would wait forever.
    caf::strong_actor_ptr found;
    std::set<std::string> interface;
    caf::error failure;
    ++attempts;
    self->request(system.middleman().actor_handle(), left, caf::connect_atom::value, endpoint.host,
                  endpoint.port)
        .receive(
            [&](const caf::node_id&, caf::strong_actor_ptr& actor, std::set<std::string>& ifs) {
              found = std::move(actor);
              interface = std::move(ifs);
            },
            [&](caf::error& error) { failure = std::move(error); });
    if (!failure) {
      RILL_CHECK(found != nullptr, kNotFound, "connected to ", endpoint.ToString(),
                 " but no actor is published there");
      RILL_CHECK(interface.empty(), kInvalidArgument, "the actor published at ",
                 endpoint.ToString(), " is a typed actor, not a Rill peer");
      return caf::actor_cast<caf::actor>(std::move(found));
    }
    last_failure = system.render(failure);
    std::this_thread::sleep_for(std::min<Clock::duration>(kRetryInterval, deadline - Clock::now()));
  }
  Fail(ErrorCode::kUnavailable, "cannot connect to ", endpoint.ToString(), " within ",
       timeout.count(), " ms (", attempts, " attempts; last: ", last_failure, ")");
}

}  // namespace rill
