// Endpoint: where a Rill process listens or connects, "HOST:PORT".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rill {

struct Endpoint {
  std::string host;  // an IPv4 or IPv6 address or a host name; never empty
  uint16_t port = 0;

  // "host:port", or "[host]:port" for an IPv6 address.
  std::string ToString() const;
};

// Parses "HOST:PORT" ("[::1]:7164" for IPv6; PORT 0 to 65535, 0 meaning any
// free port when publishing). Throws kInvalidArgument naming the text.
Endpoint ParseEndpoint(const std::string& text);
// Parses a comma-separated list of endpoints (RILL_PSERVERS); at least one.
std::vector<Endpoint> ParseEndpoints(const std::string& list);

}  // namespace rill
