// WireLimits: what a Rill process accepts from a peer.
#pragma once

#include <cstddef>

namespace rill {

struct WireLimits {
  // Larger messages are rejected before parsing.
  size_t max_message_bytes = 256u << 20;
};

}  // namespace rill
