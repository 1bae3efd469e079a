#include "actors/stream.h"

#include <caf/send.hpp>

#include "actors/messages.h"

namespace rill {

void Stream::Wake() {
  if (!actor_ || wake_pending_.exchange(true, std::memory_order_seq_cst)) return;
  caf::anon_send(actor_, wake_atom::value);
}

}  // namespace rill
