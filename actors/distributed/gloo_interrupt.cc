#include "actors/distributed/gloo_interrupt.h"

#include <sys/socket.h>

#include "gloo/transport/tcp/pair.h"

namespace rill {
namespace {

// tcp::Pair::signalExceptionExternal is what Gloo's own buffers call when a
// wait times out; it is protected (Gloo's tcp::Buffer and tcp::Context are its
// friends). A class derived from tcp::Pair may name it, and the pointer to
// member it names applies to any tcp::Pair. Nothing derived is ever built.
// The same for the pair's socket and its mode.
struct PairAccess : gloo::transport::tcp::Pair {
  PairAccess() = delete;
  static constexpr auto kSignalExternal = &PairAccess::signalExceptionExternal;
  static constexpr auto kFd = &PairAccess::fd_;
  static constexpr auto kSync = &PairAccess::sync_;
};

}  // namespace

void InterruptGlooPairs(gloo::Context& context, const std::string& why) {
  for (int rank = 0; rank < context.size; ++rank) {
    if (rank == context.rank) continue;
    auto* pair = dynamic_cast<gloo::transport::tcp::Pair*>(context.getPair(rank).get());
    if (pair == nullptr) continue;
    // A pair in sync mode is read by the collective's own thread, blocked in
    // recv(2) while it holds the pair's lock, which the external signal
    // takes: shutting the socket down first ends that recv (the collective
    // fails), and the signal then gets the lock.
    if ((pair->*PairAccess::kSync).load()) ::shutdown(pair->*PairAccess::kFd, SHUT_RDWR);
    (pair->*PairAccess::kSignalExternal)(why);
  }
}

}  // namespace rill
