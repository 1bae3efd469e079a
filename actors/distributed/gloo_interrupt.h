// InterruptGlooPairs: fails every pair of a Gloo context with `why`, so that a
// collective blocked in it throws now instead of at its timeout.
//
// Gloo offers no way to cancel a collective. A rank that dies is noticed (its
// sockets close), but a rank that stops (SIGSTOP, a hung host) keeps its
// sockets open and the kernel acks for it: the others' collectives would wait
// out the whole timeout. Rill hears of such a rank through the rendezvous
// store's heartbeats (process_group.cc), then calls this. It does what Gloo
// does when a wait on one of its buffers times out (tcp::Pair's external
// exception): every buffer waiting on the pair, bound or unbound, is woken
// with the error, the pair closes, and later operations on it throw at once.
//
// Thread-safety: may be called while another thread runs a collective on
// `context` (each pair takes its own lock); not with a context being
// destroyed.
#pragma once

#include <string>

#include "gloo/context.h"

namespace rill {

void InterruptGlooPairs(gloo::Context& context, const std::string& why);

}  // namespace rill
