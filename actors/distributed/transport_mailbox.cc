#include "actors/distributed/transport_mailbox.h"

#include <caf/send.hpp>
#include <utility>

namespace rill {

TransportCallbacks CallbacksToActor(
    caf::actor actor, std::function<Tensor(ConnectionId, const proto::WireMessage&)> destination) {
  TransportCallbacks callbacks;
  callbacks.on_open = [actor](ConnectionId id, const PeerInfo& peer) {
    caf::anon_send(actor, transport_open_atom::value, id, peer);
  };
  callbacks.on_frame = [actor](ConnectionId id, ReceivedFrame frame) {
    caf::anon_send(actor, transport_frame_atom::value, id, std::move(frame));
  };
  callbacks.on_close = [actor](ConnectionId id, const std::string& why) {
    caf::anon_send(actor, transport_close_atom::value, id, why);
  };
  callbacks.destination = std::move(destination);
  return callbacks;
}

}  // namespace rill
