// Loopback ports for network tests.
#pragma once

#include <cstdint>

namespace rill::testing {

// A loopback port where nothing listens (bound once, then closed); EXPECTs
// the socket calls to succeed.
uint16_t ClosedLoopbackPort();

}  // namespace rill::testing
