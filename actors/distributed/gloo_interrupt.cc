#include "actors/distributed/gloo_interrupt.h"

#include "gloo/transport/tcp/pair.h"

namespace rill {
namespace {

// tcp::Pair::signalExceptionExternal is what Gloo's own buffers call when a
// wait times out; it is protected (Gloo's tcp::Buffer and tcp::Context are its
// friends). A class derived from tcp::Pair may name it, and the pointer to
// member it names applies to any tcp::Pair. Nothing derived is ever built.
struct PairAccess : gloo::transport::tcp::Pair {
  PairAccess() = delete;
  static constexpr auto kSignalExternal = &PairAccess::signalExceptionExternal;
};

}  // namespace

void InterruptGlooPairs(gloo::Context& context, const std::string& why) {
  for (int rank = 0; rank < context.size; ++rank) {
    if (rank == context.rank) continue;
    auto* pair = dynamic_cast<gloo::transport::tcp::Pair*>(context.getPair(rank).get());
    if (pair != nullptr) (pair->*PairAccess::kSignalExternal)(why);
  }
}

}  // namespace rill
